package cache

// The direct upload: the machine's cache agent asks for a presigned URL
// per part and uploads each straight to the bucket, then has the parts
// completed. Both calls are POSTs to the entry's signed upload URL, so
// they allow exactly what that URL allows.

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
)

// DirectHint is appended to a signed upload URL when the store takes
// direct uploads (PartUploader).
const DirectHint = "direct=s3"

// PresignResponse is the answer to a part's presign call.
type PresignResponse struct {
	URL     string              `json:"url"`
	Headers map[string][]string `json:"headers,omitempty"`
}

// CompleteRequest names the parts of the archive, in order.
type CompleteRequest struct {
	Parts []int32 `json:"parts"`
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
		part, err1 := strconv.ParseInt(q.Get("part"), 10, 32)
		size, err2 := strconv.ParseInt(q.Get("size"), 10, 64)
		if err1 != nil || err2 != nil {
			h.refuseBlob(w, log, http.StatusBadRequest, "InvalidQueryParameterValue", "part and size must be integers")
			return
		}
		u, hdr, err := pu.PresignPart(r.Context(), id, int32(part), size, h.o.MaxEntryBytes, h.o.URLTTL)
		if err != nil {
			h.blobError(w, log, err)
			return
		}
		h.o.Metrics.bytesUp.Add(size)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(PresignResponse{URL: u, Headers: hdr})
	case "complete":
		var req CompleteRequest
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBlockListBody)).Decode(&req); err != nil {
			h.refuseBlob(w, log, http.StatusBadRequest, "InvalidXmlDocument", "parts: "+err.Error())
			return
		}
		if err := pu.CompleteParts(r.Context(), id, req.Parts, h.o.MaxEntryBytes); err != nil {
			h.blobError(w, log, err)
			return
		}
		w.WriteHeader(http.StatusCreated)
	default:
		h.refuseBlob(w, log, http.StatusBadRequest, "InvalidQueryParameterValue", "runfleet must be presign or complete")
	}
}
