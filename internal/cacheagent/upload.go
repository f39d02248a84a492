package cacheagent

// The AWS path of an upload. The client's storage SDK speaks Azure's block
// protocol, which S3 cannot take (it answers 200 where the SDK wants 201,
// and a block's query breaks a presigned URL), so when runfleet's store is
// a bucket the agent takes the SDK's blocks itself and sends each, as it
// arrives, straight to the bucket as one part of a multipart upload, on a
// URL runfleet presigns for it. Bytes go machine → S3, never through
// runfleet, and the commit copies nothing.

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

// upload is one entry's upload: the part each block became.
type upload struct {
	mu    sync.Mutex
	parts map[string]int32
	next  int32
}

// rewriteUpload points a signed upload URL of a direct-upload store at the
// agent itself (same host the client called, so the same certificate).
func (a *Agent) rewriteUpload(body []byte, host string) []byte {
	var resp map[string]any
	if json.Unmarshal(body, &resp) != nil {
		return body
	}
	u, _ := resp["signed_upload_url"].(string)
	if u == "" || !strings.Contains(u, cache.DirectHint) || !strings.HasPrefix(u, a.cacheBase+cache.BlobPrefix) {
		return body
	}
	resp["signed_upload_url"] = "https://" + host + UploadPrefix + base64.RawURLEncoding.EncodeToString([]byte(u))
	out, err := json.Marshal(resp)
	if err != nil {
		return body
	}
	return out
}

// partFor gives a block its part number. The client's SDK names block i
// base64(<36-character UUID><i, zero-padded to 12 digits>), so the part is
// i+1 and the parts come out in the block list's order whatever order the
// blocks arrive in. Other ids get the next number in arrival order; a
// block list in another order is then refused at commit (the client warns,
// the job goes on, nothing wrong is stored).
func (u *upload) partFor(blockID string) int32 {
	u.mu.Lock()
	defer u.mu.Unlock()
	if p, ok := u.parts[blockID]; ok {
		return p
	}
	p := int32(0)
	if raw, err := base64.StdEncoding.DecodeString(blockID); err == nil && len(raw) == 48 && raw[8] == '-' && raw[13] == '-' && raw[18] == '-' && raw[23] == '-' {
		if i, err := strconv.ParseInt(string(raw[36:]), 10, 32); err == nil && i >= 0 && i < 10000 {
			p = int32(i) + 1
		}
	}
	if p == 0 {
		u.next++
		p = u.next + 5000 // apart from the SDK-shaped numbers
	}
	u.parts[blockID] = p
	return p
}

func (a *Agent) uploadState(key string) *upload {
	a.uploadsMu.Lock()
	defer a.uploadsMu.Unlock()
	if a.uploads == nil {
		a.uploads = map[string]*upload{}
	}
	u, ok := a.uploads[key]
	if !ok {
		u = &upload{parts: map[string]int32{}}
		a.uploads[key] = u
	}
	return u
}

// azureError answers as Azure Blob storage would, so the SDK reads it.
func azureError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("x-ms-error-code", code)
	w.WriteHeader(status)
	_ = xml.NewEncoder(w).Encode(struct {
		XMLName xml.Name `xml:"Error"`
		Code    string
		Message string
	}{Code: code, Message: msg})
}

func (a *Agent) serveUpload(w http.ResponseWriter, r *http.Request) {
	log := a.o.Log.With("http_method", r.Method)
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(r.URL.Path, UploadPrefix))
	signed := string(raw)
	// Only runfleet's own upload URLs: the agent must not PUT to wherever a
	// caller names.
	if err != nil || !strings.HasPrefix(signed, a.cacheBase+cache.BlobPrefix) {
		azureError(w, http.StatusNotFound, "BlobNotFound", "not a runfleet upload")
		return
	}
	if rid := r.Header.Get("x-ms-client-request-id"); rid != "" {
		w.Header().Set("x-ms-client-request-id", rid)
	}
	w.Header().Set("x-ms-version", "2025-11-05")
	w.Header().Set("x-ms-request-id", strconv.FormatInt(time.Now().UnixNano(), 36))
	if r.Method != http.MethodPut {
		azureError(w, http.StatusMethodNotAllowed, "UnsupportedHttpVerb", "only PUT")
		return
	}
	up := a.uploadState(signed)
	q := r.URL.Query()
	switch q.Get("comp") {
	case "block":
		err = a.sendPart(r, signed, up.partFor(q.Get("blockid")))
	case "blocklist":
		var bl struct {
			Latest      []string `xml:"Latest"`
			Uncommitted []string `xml:"Uncommitted"`
			Committed   []string `xml:"Committed"`
		}
		if err := xml.NewDecoder(http.MaxBytesReader(w, r.Body, 8<<20)).Decode(&bl); err != nil {
			azureError(w, http.StatusBadRequest, "InvalidXmlDocument", err.Error())
			return
		}
		var parts []int32
		for _, id := range append(append(bl.Latest, bl.Uncommitted...), bl.Committed...) {
			parts = append(parts, up.partFor(id))
		}
		err = a.complete(r, signed, parts)
	case "":
		// Put Blob: the whole archive as one part.
		if err = a.sendPart(r, signed, 1); err == nil {
			err = a.complete(r, signed, []int32{1})
		}
	default:
		azureError(w, http.StatusBadRequest, "InvalidQueryParameterValue", "comp must be block or blocklist")
		return
	}
	if err != nil {
		log.Warn("cacheagent: direct upload failed", "err", err)
		status := http.StatusInternalServerError
		if se, ok := err.(*statusError); ok && se.status < 500 {
			status = se.status
		}
		azureError(w, status, "InternalError", err.Error())
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

// call posts to runfleet's signed upload URL with extra query words.
func (a *Agent) call(r *http.Request, signed string, q url.Values, body []byte) ([]byte, error) {
	u := signed + "&" + q.Encode()
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.o.CacheClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return nil, &statusError{resp.StatusCode, fmt.Sprintf("runfleet answered %d: %s", resp.StatusCode, bytes.TrimSpace(b))}
	}
	return b, nil
}

// sendPart streams the request's body to the bucket as part n.
func (a *Agent) sendPart(r *http.Request, signed string, n int32) error {
	if r.ContentLength < 0 {
		return &statusError{http.StatusLengthRequired, "Content-Length is required"}
	}
	b, err := a.call(r, signed, url.Values{"runfleet": {"presign"}, "part": {strconv.Itoa(int(n))}, "size": {strconv.FormatInt(r.ContentLength, 10)}}, nil)
	if err != nil {
		return err
	}
	var p cache.PresignResponse
	if err := json.Unmarshal(b, &p); err != nil || p.URL == "" {
		return fmt.Errorf("runfleet's presign answer: %v", err)
	}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPut, p.URL, r.Body)
	if err != nil {
		return err
	}
	req.ContentLength = r.ContentLength
	for k, vs := range p.Headers {
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

func (a *Agent) complete(r *http.Request, signed string, parts []int32) error {
	body, _ := json.Marshal(cache.CompleteRequest{Parts: parts})
	_, err := a.call(r, signed, url.Values{"runfleet": {"complete"}}, body)
	if err == nil {
		a.uploadsMu.Lock()
		delete(a.uploads, signed)
		a.uploadsMu.Unlock()
	}
	return err
}
