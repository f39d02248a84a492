package cache

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// plainStored is the file the plain server keeps the archive in.
const plainStored = "plain-http-stored"

// plainHTTP is the disk served over HTTP without runfleet: one PUT of the
// archive written to a file as it arrives, one GET served from the file
// (net/http sends it with sendfile). It is the second raw figure of the
// disk: the same bytes, the same loopback and the same client code as
// runfleet's path, with nothing of runfleet's in between. What separates it
// from the in-kernel file copy is HTTP itself on these cores, which no
// cache service can avoid.
type plainHTTP struct {
	srv    *httptest.Server
	client *http.Client
}

func newPlainHTTP(b *testing.B, dir string) *plainHTTP {
	stored := filepath.Join(dir, plainStored)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPut:
			f, err := os.Create(stored)
			if err == nil {
				// Through a 1 MiB buffer, as the store writes: io.Copy's
				// 32 KiB costs four times the system calls, and halved
				// this save's speed, which flattered runfleet.
				_, err = io.CopyBuffer(onlyWriter{f}, r.Body, make([]byte, 1<<20))
				if cerr := f.Close(); err == nil {
					err = cerr
				}
			}
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			w.WriteHeader(http.StatusCreated)
		case http.MethodGet:
			// The file straight to the socket (sendfile), with none of
			// ServeFile's range and precondition handling in the way.
			f, err := os.Open(stored)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			defer f.Close()
			fi, err := f.Stat()
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Length", strconv.FormatInt(fi.Size(), 10))
			_, _ = io.Copy(w, f)
		}
	}))
	b.Cleanup(srv.Close)
	return &plainHTTP{srv: srv, client: &http.Client{}}
}

func (p *plainHTTP) save(b *testing.B, archive string, size int64) {
	f, err := os.Open(archive)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	req, err := http.NewRequest(http.MethodPut, p.srv.URL+"/archive", f)
	if err != nil {
		b.Fatal(err)
	}
	req.ContentLength = size
	resp, err := p.client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		b.Fatalf("plain PUT: %s", resp.Status)
	}
}

func (p *plainHTTP) restore(b *testing.B, dst string) {
	resp, err := p.client.Get(p.srv.URL + "/archive")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	writeDownload(b, dst, resp.Body)
}
