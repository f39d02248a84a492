package cacheagent

// The AWS path of an upload. The client's storage SDK speaks Azure's block
// protocol, which S3 cannot take (it answers 200 where the SDK wants 201,
// and a block's query breaks a presigned URL), so when runfleet's store is
// a bucket the agent takes the SDK's blocks itself and sends each, as it
// arrives, straight to the bucket as one plain object (a part of the
// entry, internal/cache/parts.go), on a URL runfleet presigns for it; the
// block list becomes the parts' order. Bytes go machine → S3, never
// through runfleet, and the commit copies nothing. A single-shot Put Blob
// goes to the entry's one object, restored by one presigned GET.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/runfleet/runfleet/internal/cache"
)

// UploadPrefix is where the agent takes an upload it sends to the bucket.
const UploadPrefix = "/_runfleet/upload/"

// maxCallAnswer bounds an answer of runfleet's blob URL: a restore's parts
// call lists one presigned URL per part (cache.MaxEntryParts).
const maxCallAnswer = 8 << 20

// upload is one entry's upload: the parts each block became.
type upload struct {
	mu    sync.Mutex
	parts map[string][]int32
	next  int32
}

// pieceBytes is the most one part object holds (cache.PieceBytes): a
// block of the SDK (64 MiB) is sent as pieces of this size, each its own
// part, so a restore's ranged GETs (fetchChunk, the same size) each read
// one whole object. cache.MaxEntryParts pieces are 16 GiB, over the
// default 10 GiB limit.
const pieceBytes = cache.PieceBytes

// rewriteUpload points a signed upload URL of a direct-upload store at the
// agent itself (same host the client called, so the same certificate).
func (a *Agent) rewriteUpload(body []byte, host string) []byte {
	return a.rewriteURL(body, host, "signed_upload_url", cache.DirectHint, UploadPrefix)
}

// runfleetURL reads the runfleet URL that rewriteURL put in r's path after
// prefix. Any other (not decodable, or not under runfleet's cache base) is
// answered 404 here, naming what was asked for (an upload, a download):
// the agent must not reach wherever a caller names.
func (a *Agent) runfleetURL(w http.ResponseWriter, r *http.Request, prefix, what string) (string, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(r.URL.Path, prefix))
	signed := string(raw)
	if err != nil || !strings.HasPrefix(signed, a.cacheBase+cache.BlobPrefix) {
		cache.WriteBlobError(w, http.StatusNotFound, "BlobNotFound", "not a runfleet "+what)
		return "", false
	}
	return signed, true
}

// rewriteURL points the runfleet URL in field of a twirp answer, when it
// carries hint, at the agent under prefix. Only URLs under runfleet's
// cache base are rewritten: the agent acts only for runfleet's own.
func (a *Agent) rewriteURL(body []byte, host, field, hint, prefix string) []byte {
	var resp map[string]any
	if json.Unmarshal(body, &resp) != nil {
		return body
	}
	u, _ := resp[field].(string)
	if u == "" || !strings.Contains(u, hint) || !strings.HasPrefix(u, a.cacheBase+cache.BlobPrefix) {
		return body
	}
	resp[field] = "https://" + host + prefix + base64.RawURLEncoding.EncodeToString([]byte(u))
	out, err := json.Marshal(resp)
	if err != nil {
		return body
	}
	return out
}

// piecesFor gives a block of size bytes its part numbers, one per
// pieceBytes: the next ones in arrival order, the same again for a block
// sent again with the same size (a retry replaces its objects; one of
// another size gets new numbers, and its old objects, named by no block
// list, are deleted at completion). The numbers only name the parts'
// objects; the block list gives the order.
func (u *upload) piecesFor(blockID string, size int64) []int32 {
	k := max(1, int((size+pieceBytes-1)/pieceBytes))
	u.mu.Lock()
	defer u.mu.Unlock()
	if p, ok := u.parts[blockID]; ok && len(p) == k {
		return p
	}
	p := make([]int32, k)
	for i := range p {
		u.next++
		p[i] = u.next
	}
	u.parts[blockID] = p
	return p
}

// staged are the part numbers of a block already sent; false for a block
// never sent.
func (u *upload) staged(blockID string) ([]int32, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	p, ok := u.parts[blockID]
	return p, ok
}

func (a *Agent) uploadState(key string) *upload {
	a.uploadsMu.Lock()
	defer a.uploadsMu.Unlock()
	if a.uploads == nil {
		a.uploads = map[string]*upload{}
	}
	u, ok := a.uploads[key]
	if !ok {
		u = &upload{parts: map[string][]int32{}}
		a.uploads[key] = u
	}
	return u
}

func (a *Agent) serveUpload(w http.ResponseWriter, r *http.Request) {
	log := a.o.Log.With("http_method", r.Method)
	signed, ok := a.runfleetURL(w, r, UploadPrefix, "upload")
	if !ok {
		return
	}
	if rid := r.Header.Get("x-ms-client-request-id"); rid != "" {
		w.Header().Set("x-ms-client-request-id", rid)
	}
	w.Header().Set("x-ms-version", "2025-11-05")
	w.Header().Set("x-ms-request-id", strconv.FormatInt(time.Now().UnixNano(), 36))
	if r.Method != http.MethodPut {
		cache.WriteBlobError(w, http.StatusMethodNotAllowed, "UnsupportedHttpVerb", "only PUT")
		return
	}
	up := a.uploadState(signed)
	q := r.URL.Query()
	var err error
	switch q.Get("comp") {
	case "block":
		err = a.sendBlock(r, signed, up.piecesFor(q.Get("blockid"), r.ContentLength))
	case "blocklist":
		var bl struct {
			Latest      []string `xml:"Latest"`
			Uncommitted []string `xml:"Uncommitted"`
			Committed   []string `xml:"Committed"`
		}
		if err := xml.NewDecoder(http.MaxBytesReader(w, r.Body, 8<<20)).Decode(&bl); err != nil {
			cache.WriteBlobError(w, http.StatusBadRequest, "InvalidXmlDocument", err.Error())
			return
		}
		var parts []int32
		for _, id := range append(append(bl.Latest, bl.Uncommitted...), bl.Committed...) {
			p, ok := up.staged(id)
			if !ok {
				cache.WriteBlobError(w, http.StatusBadRequest, "InvalidBlockList", "the block list names a block that was not staged")
				return
			}
			parts = append(parts, p...)
		}
		err = a.complete(r, signed, cache.CompleteRequest{Parts: parts})
	case "":
		// Put Blob: the whole archive, as the entry's one object.
		if err = a.sendPart(r, signed, cache.WholeObject, r.ContentLength, r.Body); err == nil {
			err = a.complete(r, signed, cache.CompleteRequest{Whole: true})
		}
	default:
		cache.WriteBlobError(w, http.StatusBadRequest, "InvalidQueryParameterValue", "comp must be block or blocklist")
		return
	}
	if err != nil {
		log.Warn("cacheagent: direct upload failed", "err", err)
		status := http.StatusInternalServerError
		if se, ok := err.(*statusError); ok && se.status < 500 {
			status = se.status
		}
		cache.WriteBlobError(w, status, "InternalError", err.Error())
		return
	}
	w.Header().Set("ETag", fmt.Sprintf(`"0x%X"`, time.Now().UnixNano()))
	w.Header().Set("Last-Modified", time.Now().UTC().Format(http.TimeFormat))
	w.Header().Set("x-ms-request-server-encrypted", "true")
	w.WriteHeader(http.StatusCreated)
}

type statusError struct {
	status int
	msg    string
}

func (e *statusError) Error() string { return e.msg }

// call sends method to runfleet's signed URL with extra query words.
func (a *Agent) call(r *http.Request, method, signed string, q url.Values, body []byte) ([]byte, error) {
	u := signed + "&" + q.Encode()
	req, err := http.NewRequestWithContext(r.Context(), method, u, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.o.CacheClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxCallAnswer))
	if resp.StatusCode/100 != 2 {
		return nil, &statusError{resp.StatusCode, fmt.Sprintf("runfleet answered %d: %s", resp.StatusCode, bytes.TrimSpace(b))}
	}
	return b, nil
}

// sendBlock streams the request's body (a block) to the bucket as parts
// (consecutive numbers), pieceBytes each, one after the other, on URLs
// runfleet presigns for the whole block in one call.
func (a *Agent) sendBlock(r *http.Request, signed string, parts []int32) error {
	if r.ContentLength < 0 {
		return &statusError{http.StatusLengthRequired, "Content-Length is required"}
	}
	b, err := a.call(r, http.MethodPost, signed, url.Values{"runfleet": {"presign"}, "part": {strconv.Itoa(int(parts[0]))},
		"size": {strconv.FormatInt(r.ContentLength, 10)}, "pieces": {strconv.Itoa(len(parts))}}, nil)
	if err != nil {
		return err
	}
	var p cache.PresignResponse
	if err := json.Unmarshal(b, &p); err != nil || len(p.Parts) != len(parts) {
		return fmt.Errorf("runfleet's presign answer: %d parts for %d (%v)", len(p.Parts), len(parts), err)
	}
	var total int64
	for i, part := range p.Parts {
		if part.Part != parts[i] || part.URL == "" || part.Size < 0 {
			return fmt.Errorf("runfleet's presign answer names part %d where %d was asked", part.Part, parts[i])
		}
		total += part.Size
	}
	if total != r.ContentLength {
		return fmt.Errorf("runfleet's presign answer covers %d bytes of a %d-byte block", total, r.ContentLength)
	}
	for _, part := range p.Parts {
		if err := a.put(r, part.URL, part.Headers, part.Size, io.LimitReader(r.Body, part.Size)); err != nil {
			return err
		}
	}
	return nil
}

// sendPart streams size bytes of body to the bucket as part n
// (cache.WholeObject: the entry's one object).
func (a *Agent) sendPart(r *http.Request, signed string, n int32, size int64, body io.Reader) error {
	if size < 0 {
		return &statusError{http.StatusLengthRequired, "Content-Length is required"}
	}
	q := url.Values{"runfleet": {"presign"}, "size": {strconv.FormatInt(size, 10)}}
	if n == cache.WholeObject {
		q.Set("whole", "1")
	} else {
		q.Set("part", strconv.Itoa(int(n)))
	}
	b, err := a.call(r, http.MethodPost, signed, q, nil)
	if err != nil {
		return err
	}
	var p cache.PresignResponse
	if err := json.Unmarshal(b, &p); err != nil || p.URL == "" {
		return fmt.Errorf("runfleet's presign answer: %v", err)
	}
	return a.put(r, p.URL, p.Headers, size, body)
}

// put streams size bytes of body to the bucket on a presigned URL.
func (a *Agent) put(r *http.Request, u string, headers map[string][]string, size int64, body io.Reader) error {
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPut, u, body)
	if err != nil {
		return err
	}
	req.ContentLength = size
	if size == 0 {
		req.Body = http.NoBody
	}
	for k, vs := range headers {
		if strings.EqualFold(k, "Host") || strings.EqualFold(k, "Content-Length") {
			continue
		}
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := a.o.StorageClient.Do(req)
	if err != nil {
		return fmt.Errorf("the bucket: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("the bucket answered %d: %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	a.directParts.Add(1)
	return nil
}

func (a *Agent) complete(r *http.Request, signed string, c cache.CompleteRequest) error {
	body, _ := json.Marshal(c)
	_, err := a.call(r, http.MethodPost, signed, url.Values{"runfleet": {"complete"}}, body)
	if err == nil {
		a.uploadsMu.Lock()
		delete(a.uploads, signed)
		a.uploadsMu.Unlock()
	}
	return err
}
