package cacheagent

// The AWS path of a restore. An entry the agent saved in parts
// (internal/cache/parts.go) is not one object S3 can hand out on one
// presigned GET, so runfleet's lookup answers its own signed URL with a
// hint, which the agent points at itself. On the client's GET the agent
// asks runfleet (one call) for presigned GETs of every part, pinned to the
// ETags recorded at the save, fetches them from the bucket in parallel in
// ranged chunks, and writes them to the client in order with the
// archive's Content-Length. A part changed since the save is answered 412
// by S3 (If-Match): the restore fails — an error, or a body cut short the
// client's length check catches — and the client warns and misses; it
// never gets other bytes.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/runfleet/runfleet/internal/cache"
)

// DownloadPrefix is where the agent takes a restore it fetches from the
// bucket.
const DownloadPrefix = "/_runfleet/download/"

// The restore's fetch window: fetchWindow ranged GETs of fetchChunk bytes
// in flight, so a restore holds about (fetchWindow+1) × fetchChunk (72 MiB)
// whatever the archive's size.
const (
	fetchChunk  = 8 << 20
	fetchWindow = 8
)

// rewriteDownload points a signed download URL of an entry in parts at
// the agent itself.
func (a *Agent) rewriteDownload(body []byte, host string) []byte {
	return a.rewriteURL(body, host, "signed_download_url", cache.PartsHint, DownloadPrefix)
}

func (a *Agent) serveDownload(w http.ResponseWriter, r *http.Request) {
	log := a.o.Log.With("http_method", r.Method)
	signed, ok := a.runfleetURL(w, r, DownloadPrefix, "download")
	if !ok {
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		cache.WriteBlobError(w, http.StatusMethodNotAllowed, "UnsupportedHttpVerb", "only GET and HEAD")
		return
	}
	list, err := a.partsOf(r, signed)
	if err != nil {
		log.Warn("cacheagent: restore refused", "err", err)
		status := http.StatusBadGateway
		var se *statusError
		if errors.As(err, &se) && se.status < 500 {
			status = se.status
		}
		cache.WriteBlobError(w, status, "InternalError", err.Error())
		return
	}
	// A range (Azure's x-ms-range, which BuildKit's gha cache sends to
	// read at an offset, or HTTP's Range) is fetched alone: never the
	// archive from its start in its place.
	want, err := cache.WantedRange(r.Header, list.Size)
	if err != nil {
		if errors.Is(err, cache.ErrRangeNotSatisfiable) {
			w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", list.Size))
			cache.WriteBlobError(w, http.StatusRequestedRangeNotSatisfiable, "InvalidRange", err.Error())
			return
		}
		cache.WriteBlobError(w, http.StatusBadRequest, "InvalidHeaderValue", err.Error())
		return
	}
	if r.Method == http.MethodHead {
		setArchiveHeaders(w, want)
		w.WriteHeader(want.Status())
		return
	}
	started, err := a.streamParts(r.Context(), w, list, want)
	switch {
	case err != nil && !started:
		log.Warn("cacheagent: restore failed", "err", err)
		cache.WriteBlobError(w, http.StatusBadGateway, "InternalError", err.Error())
	case err != nil:
		// The headers are gone: the short body is the signal, which the
		// client's length check turns into a warning and a miss.
		log.Warn("cacheagent: restore cut short", "err", err)
	}
}

// setArchiveHeaders writes the headers of the archive's wanted bytes.
func setArchiveHeaders(w http.ResponseWriter, want cache.ByteRange) {
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(want.N, 10))
	w.Header().Set("Accept-Ranges", "bytes")
	w.Header().Set("x-ms-blob-type", "BlockBlob")
	if want.Partial {
		w.Header().Set("Content-Range", want.ContentRange())
	}
}

// partsOf asks runfleet for the presigned GETs of the entry's parts.
func (a *Agent) partsOf(r *http.Request, signed string) (cache.PartsResponse, error) {
	var list cache.PartsResponse
	b, err := a.call(r, http.MethodGet, signed, url.Values{"runfleet": {"parts"}}, nil)
	if err != nil {
		return list, err
	}
	if err := json.Unmarshal(b, &list); err != nil {
		return list, fmt.Errorf("runfleet's parts answer: %w", err)
	}
	var total int64
	for _, p := range list.Parts {
		if p.Size < 0 || p.URL == "" {
			return list, errors.New("runfleet's parts answer names a part without a URL or size")
		}
		total += p.Size
	}
	if len(list.Parts) == 0 || total != list.Size {
		return list, fmt.Errorf("runfleet's parts answer: %d parts of %d bytes for an archive of %d", len(list.Parts), total, list.Size)
	}
	return list, nil
}

// span is one ranged GET of a part.
type span struct {
	part    *cache.PartURL
	index   int
	off, n  int64
	nParts  int
	lastOfP bool
}

// spans cuts the parts' bytes within want into fetchChunk ranges, in the
// archive's order.
func spans(parts []cache.PartURL, want cache.ByteRange) []span {
	var out []span
	end := want.Start + want.N
	at := int64(0) // the archive's offset of part i
	for i := range parts {
		p := &parts[i]
		from, to := max(want.Start-at, 0), min(end-at, p.Size)
		for off := from; off < to; off += fetchChunk {
			n := min(fetchChunk, to-off)
			out = append(out, span{part: p, index: i, off: off, n: n, nParts: len(parts), lastOfP: off+n == p.Size})
		}
		at += p.Size
	}
	return out
}

type fetched struct {
	buf []byte
	err error
}

// streamParts writes the archive to w in order while up to fetchWindow
// ranges are fetched ahead; started says whether the response began (the
// first range arrived). The first error stops it.
func (a *Agent) streamParts(ctx context.Context, w http.ResponseWriter, list cache.PartsResponse, want cache.ByteRange) (started bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// free holds the buffers (allocated on first use): fetchWindow in
	// flight and one being written.
	free := make(chan []byte, fetchWindow+1)
	for range fetchWindow + 1 {
		free <- nil
	}
	queue := make(chan chan fetched, fetchWindow)
	go func() {
		defer close(queue)
		for _, s := range spans(list.Parts, want) {
			var buf []byte
			select {
			case buf = <-free:
			case <-ctx.Done():
				return
			}
			done := make(chan fetched, 1)
			select {
			case queue <- done:
			case <-ctx.Done():
				return
			}
			go func() { done <- a.fetch(ctx, s, buf) }()
		}
	}()
	for done := range queue {
		f := <-done
		if f.err != nil {
			return started, f.err
		}
		if !started {
			setArchiveHeaders(w, want)
			w.WriteHeader(want.Status())
			started = true
		}
		if _, err := w.Write(f.buf); err != nil {
			return started, fmt.Errorf("the client: %w", err)
		}
		free <- f.buf[:cap(f.buf)]
	}
	if ctx.Err() != nil {
		return started, ctx.Err()
	}
	if !started {
		// An archive of empty parts only.
		setArchiveHeaders(w, want)
		w.WriteHeader(want.Status())
		started = true
	}
	return started, nil
}

// fetch GETs one range of a part into buf, holding it to the part's ETag.
func (a *Agent) fetch(ctx context.Context, s span, buf []byte) fetched {
	if buf == nil {
		buf = make([]byte, fetchChunk)
	}
	buf = buf[:s.n]
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.part.URL, nil)
	if err != nil {
		return fetched{err: err}
	}
	for k, vs := range s.part.Headers {
		if strings.EqualFold(k, "Host") {
			continue
		}
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", s.off, s.off+s.n-1))
	resp, err := a.o.StorageClient.Do(req)
	if err != nil {
		return fetched{err: fmt.Errorf("the bucket: %w", err)}
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusPreconditionFailed:
		return fetched{err: fmt.Errorf("part %d of %d changed since the save (its ETag is not %s)", s.index+1, s.nParts, s.part.ETag)}
	case resp.StatusCode != http.StatusPartialContent && !(resp.StatusCode == http.StatusOK && s.off == 0 && s.n == s.part.Size):
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fetched{err: fmt.Errorf("the bucket answered %d for part %d of %d: %s", resp.StatusCode, s.index+1, s.nParts, bytes.TrimSpace(b))}
	case resp.Header.Get("ETag") != "" && resp.Header.Get("ETag") != s.part.ETag:
		return fetched{err: fmt.Errorf("part %d of %d changed since the save (ETag %s, recorded %s)", s.index+1, s.nParts, resp.Header.Get("ETag"), s.part.ETag)}
	}
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		return fetched{err: fmt.Errorf("part %d of %d: %w", s.index+1, s.nParts, err)}
	}
	if s.lastOfP {
		a.restoredParts.Add(1)
	}
	return fetched{buf: buf}
}
