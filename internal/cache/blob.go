package cache

// The blob side of the service: the signed URLs the twirp calls hand out,
// and the Azure Blob requests the client's storage SDK sends to them.

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
)

// signature is the HMAC of what a blob URL allows: one operation (u:
// upload, d: download) on one entry of one repository until exp.
func (h *Handler) signature(op string, id, repoID, exp int64) string {
	m := hmac.New(sha256.New, h.o.BlobKey)
	fmt.Fprintf(m, "runfleet-cache-blob\n%s\n%d\n%d\n%d", op, id, repoID, exp)
	return hex.EncodeToString(m.Sum(nil))
}

func (h *Handler) signedURL(op string, id, repoID int64) string {
	exp := h.o.Now().Add(h.o.URLTTL).Unix()
	q := url.Values{}
	q.Set("op", op)
	q.Set("repo", strconv.FormatInt(repoID, 10))
	q.Set("exp", strconv.FormatInt(exp, 10))
	q.Set("sig", h.signature(op, id, repoID, exp))
	return h.o.PublicURL + BlobPrefix + strconv.FormatInt(id, 10) + "?" + q.Encode()
}

// checkURL verifies a blob URL's signature (constant time) and expiry.
func (h *Handler) checkURL(q url.Values, op string, id int64) error {
	repoID, err1 := strconv.ParseInt(q.Get("repo"), 10, 64)
	exp, err2 := strconv.ParseInt(q.Get("exp"), 10, 64)
	if err1 != nil || err2 != nil || q.Get("op") != op {
		return errors.New("malformed signed URL")
	}
	want := h.signature(op, id, repoID, exp)
	if !hmac.Equal([]byte(want), []byte(q.Get("sig"))) {
		return errors.New("bad signature")
	}
	if h.o.Now().Unix() > exp {
		return errors.New("signed URL expired")
	}
	return nil
}

// refuseBlob answers as Azure Blob storage does: an XML error body with
// a code, which the storage SDK reads into its RestError.
func (h *Handler) refuseBlob(w http.ResponseWriter, log *slog.Logger, status int, code, msg string) {
	log.Warn("cache: blob request refused", "status", status, "code", code, "reason", msg)
	WriteBlobError(w, status, code, msg)
}

// WriteBlobError answers as Azure Blob storage does when it refuses a
// request — an XML error body and its code in x-ms-error-code — so the
// storage SDK inside @actions/cache reads it into its RestError. The
// machine's agent answers its blob requests the same way.
func WriteBlobError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("x-ms-error-code", code)
	w.WriteHeader(status)
	_ = xml.NewEncoder(w).Encode(struct {
		XMLName xml.Name `xml:"Error"`
		Code    string
		Message string
	}{Code: code, Message: msg})
}

func (h *Handler) serveBlob(w http.ResponseWriter, r *http.Request, rest string) {
	log := h.o.Log.With("http_method", r.Method, "entry", rest)
	id, err := strconv.ParseInt(rest, 10, 64)
	if err != nil {
		h.refuseBlob(w, log, http.StatusNotFound, "BlobNotFound", "no such blob")
		return
	}
	if rid := r.Header.Get("x-ms-client-request-id"); rid != "" {
		w.Header().Set("x-ms-client-request-id", rid)
	}
	w.Header().Set("x-ms-request-id", strconv.FormatInt(h.o.Now().UnixNano(), 36))
	w.Header().Set("x-ms-version", "2025-11-05")
	op := "d"
	if r.Method == http.MethodPut || r.Method == http.MethodPost {
		op = "u"
	}
	if err := h.checkURL(r.URL.Query(), op, id); err != nil {
		h.refuseBlob(w, log, http.StatusForbidden, "AuthenticationFailed", err.Error())
		return
	}
	switch r.Method {
	case http.MethodPut:
		h.upload(w, r, log, id)
	case http.MethodPost:
		h.direct(w, r, log, id)
	case http.MethodGet, http.MethodHead:
		if r.URL.Query().Get("runfleet") == "parts" {
			h.parts(w, r, log, id)
			return
		}
		h.download(w, r, log, id)
	default:
		h.refuseBlob(w, log, http.StatusMethodNotAllowed, "UnsupportedHttpVerb", "only PUT, POST, GET and HEAD")
	}
}

// blobError maps a store error on the blob path to Azure's words.
func (h *Handler) blobError(w http.ResponseWriter, log *slog.Logger, err error) {
	var ie *InvalidError
	switch {
	case errors.As(err, &ie):
		h.refuseBlob(w, log, http.StatusBadRequest, "InvalidInput", ie.Error())
	case errors.Is(err, ErrTooLarge):
		h.refuseBlob(w, log, http.StatusRequestEntityTooLarge, "RequestBodyTooLarge", fmt.Sprintf("over the %d-byte limit", h.o.MaxEntryBytes))
	case errors.Is(err, ErrNotFound):
		h.refuseBlob(w, log, http.StatusNotFound, "BlobNotFound", "no such entry (evicted, or never reserved)")
	case errors.Is(err, ErrNeedsAgent):
		h.refuseBlob(w, log, http.StatusNotImplemented, "NotImplemented", err.Error())
	case errors.Is(err, ErrNotPending):
		h.refuseBlob(w, log, http.StatusConflict, "BlobImmutable", "the entry is finalized; its bytes never change")
	default:
		log.Error("cache: blob store failed", "err", err)
		h.refuseBlob(w, log, http.StatusInternalServerError, "InternalError", "cache store failed")
	}
}

type blockList struct {
	Latest      []string `xml:"Latest"`
	Uncommitted []string `xml:"Uncommitted"`
	Committed   []string `xml:"Committed"`
}

func (h *Handler) upload(w http.ResponseWriter, r *http.Request, log *slog.Logger, id int64) {
	q := r.URL.Query()
	// A declared length over the limit is refused before a byte is read;
	// an undeclared one is cut off by the store's limit.
	if comp := q.Get("comp"); comp != "blocklist" && r.ContentLength > h.o.MaxEntryBytes {
		h.blobError(w, log, ErrTooLarge)
		return
	}
	var n int64
	var err error
	switch q.Get("comp") {
	case "block":
		n, err = h.o.Store.PutBlock(r.Context(), id, q.Get("blockid"), r.Body, r.ContentLength, h.o.MaxEntryBytes)
	case "blocklist":
		var bl blockList
		if err := xml.NewDecoder(http.MaxBytesReader(w, r.Body, maxBlockListBody)).Decode(&bl); err != nil {
			h.refuseBlob(w, log, http.StatusBadRequest, "InvalidXmlDocument", "block list: "+err.Error())
			return
		}
		// Everything here is staged and uncommitted; which element names a
		// block does not change where its bytes are.
		ids := append(append(bl.Latest, bl.Uncommitted...), bl.Committed...)
		err = h.o.Store.CommitBlocks(r.Context(), id, ids)
	case "":
		if t := r.Header.Get("x-ms-blob-type"); t != "BlockBlob" {
			h.refuseBlob(w, log, http.StatusBadRequest, "InvalidHeaderValue", "x-ms-blob-type must be BlockBlob")
			return
		}
		n, err = h.o.Store.PutBlob(r.Context(), id, r.Body, r.ContentLength, h.o.MaxEntryBytes)
	default:
		h.refuseBlob(w, log, http.StatusBadRequest, "InvalidQueryParameterValue", "comp must be block or blocklist")
		return
	}
	if err != nil {
		h.blobError(w, log, err)
		return
	}
	h.o.Metrics.bytesUp.Add(n)
	w.Header().Set("ETag", fmt.Sprintf(`"0x%X"`, h.o.Now().UnixNano()))
	w.Header().Set("Last-Modified", h.o.Now().UTC().Format(http.TimeFormat))
	w.Header().Set("x-ms-request-server-encrypted", "false")
	w.WriteHeader(http.StatusCreated)
}

func (h *Handler) download(w http.ResponseWriter, r *http.Request, log *slog.Logger, id int64) {
	rc, size, err := h.o.Store.Open(r.Context(), id)
	if err != nil {
		h.blobError(w, log, err)
		return
	}
	defer rc.Close()
	want, err := WantedRange(r.Header, size)
	switch {
	case errors.Is(err, ErrRangeNotSatisfiable):
		w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", size))
		h.refuseBlob(w, log, http.StatusRequestedRangeNotSatisfiable, "InvalidRange", "the range starts at or after the blob's end")
		return
	case err != nil:
		h.refuseBlob(w, log, http.StatusBadRequest, "InvalidHeaderValue", err.Error())
		return
	}
	start, length, partial, status := want.Start, want.N, want.Partial, want.Status()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(length, 10))
	w.Header().Set("Accept-Ranges", "bytes")
	w.Header().Set("x-ms-blob-type", "BlockBlob")
	if partial {
		w.Header().Set("Content-Range", want.ContentRange())
	}
	if r.Method == http.MethodHead {
		w.WriteHeader(status)
		return
	}
	if err := skipTo(rc, start); err != nil {
		log.Warn("cache: download could not reach its range", "err", err, "start", start)
		h.refuseBlob(w, log, http.StatusInternalServerError, "InternalError", "cache store failed")
		return
	}
	w.WriteHeader(status)
	// The whole blob is copied as the store gives it, so a disk store's
	// files go to the socket with sendfile; a range is cut to its length.
	var body io.Reader = rc
	if partial {
		body = io.LimitReader(rc, length)
	}
	n, err := io.Copy(w, body)
	h.o.Metrics.bytesDown.Add(n)
	if err != nil {
		// Headers are gone: the short body is the signal, and the
		// client's length check turns it into a retry or a miss.
		log.Warn("cache: download cut short", "err", err, "bytes", n, "size", length)
	}
}
