package cache

// The direct upload: the machine's cache agent asks for a presigned URL
// per part and uploads each straight to the bucket, then has the parts
// completed. Both calls are POSTs to the entry's signed upload URL, so
// they allow exactly what that URL allows. The direct restore of an entry
// kept in parts: the agent GETs the entry's signed download URL with
// runfleet=parts and is answered the parts' presigned GETs.

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
)

// DirectHint is appended to a signed upload URL when the store takes
// direct uploads (PartUploader).
const DirectHint = "direct=s3"

// PartsHint is appended to a signed download URL when the entry is kept
// in parts: the machine's cache agent fetches them itself, in parallel; a
// client without the agent GETs the URL as it is (serve streams the
// parts; a function refuses, ErrNeedsAgent).
const PartsHint = "parts=s3"

// PresignResponse is the answer to a part's presign call; to a block's
// (pieces=k), Parts.
type PresignResponse struct {
	URL     string              `json:"url,omitempty"`
	Headers map[string][]string `json:"headers,omitempty"`
	Parts   []PresignedPart     `json:"parts,omitempty"`
}

// CompleteRequest names the parts of the archive, in order; Whole: the
// archive is the one object uploaded as WholeObject.
type CompleteRequest struct {
	Parts []int32 `json:"parts,omitempty"`
	Whole bool    `json:"whole,omitempty"`
}

func (h *Handler) direct(w http.ResponseWriter, r *http.Request, log *slog.Logger, id int64) {
	pu, ok := h.o.Store.(PartUploader)
	if !ok {
		h.refuseBlob(w, log, http.StatusNotImplemented, "NotImplemented", "this store takes uploads through runfleet only")
		return
	}
	q := r.URL.Query()
	switch q.Get("runfleet") {
	case "presign":
		// whole=1: the single-shot upload, the archive's one object;
		// else part=n (1–MaxEntryParts).
		part, err1 := int64(WholeObject), error(nil)
		if q.Get("whole") != "1" {
			part, err1 = strconv.ParseInt(q.Get("part"), 10, 32)
			if err1 == nil && part < 1 {
				err1 = strconv.ErrRange
			}
		}
		size, err2 := strconv.ParseInt(q.Get("size"), 10, 64)
		if err1 != nil || err2 != nil {
			h.refuseBlob(w, log, http.StatusBadRequest, "InvalidQueryParameterValue", "part (from 1) and size must be integers, or whole=1 and size")
			return
		}
		var resp PresignResponse
		var err error
		if k := q.Get("pieces"); k != "" && part != int64(WholeObject) {
			// A block as parts part, part+1, … of PieceBytes: k says how
			// many the agent expects, so a disagreement is refused.
			resp.Parts, err = pu.PresignPieces(r.Context(), id, int32(part), size, h.o.MaxEntryBytes, h.o.URLTTL)
			if err == nil && strconv.Itoa(len(resp.Parts)) != k {
				err = &InvalidError{Field: "pieces", Reason: fmt.Sprintf("a block of %d bytes is %d parts of %d bytes, not %s", size, len(resp.Parts), PieceBytes, k)}
			}
		} else {
			resp.URL, resp.Headers, err = pu.PresignPart(r.Context(), id, int32(part), size, h.o.MaxEntryBytes, h.o.URLTTL)
		}
		if err != nil {
			h.blobError(w, log, err)
			return
		}
		h.o.Metrics.bytesUp.Add(size)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(resp)
	case "complete":
		var req CompleteRequest
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBlockListBody)).Decode(&req); err != nil {
			h.refuseBlob(w, log, http.StatusBadRequest, "InvalidXmlDocument", "parts: "+err.Error())
			return
		}
		var err error
		if req.Whole {
			err = pu.CompleteWhole(r.Context(), id, h.o.MaxEntryBytes)
		} else {
			err = pu.CompleteParts(r.Context(), id, req.Parts, h.o.MaxEntryBytes)
		}
		if err != nil {
			h.blobError(w, log, err)
			return
		}
		w.WriteHeader(http.StatusCreated)
	default:
		h.refuseBlob(w, log, http.StatusBadRequest, "InvalidQueryParameterValue", "runfleet must be presign or complete")
	}
}

// parts answers a restore's parts call (GET <signed download URL>&runfleet=parts).
func (h *Handler) parts(w http.ResponseWriter, r *http.Request, log *slog.Logger, id int64) {
	pd, ok := h.o.Store.(PartDownloader)
	if !ok {
		h.refuseBlob(w, log, http.StatusNotImplemented, "NotImplemented", "this store keeps no entry in parts")
		return
	}
	resp, err := pd.DownloadParts(r.Context(), id, h.o.URLTTL)
	if err != nil {
		h.blobError(w, log, err)
		return
	}
	h.o.Metrics.bytesDown.Add(resp.Size)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}
