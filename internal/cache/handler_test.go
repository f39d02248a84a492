package cache

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/metadata"
	"github.com/runfleet/runfleet/internal/testclock"
	"github.com/runfleet/runfleet/internal/testlog"
)

type handlerWorld struct {
	h      *Handler
	clock  *testclock.Clock
	tokens *Tokens
	logs   *testlog.Buffer
	key    []byte
}

// testKey signs the tests' tokens; testService's tokens use it.
var testKey = bytes.Repeat([]byte("k"), 32)

// testService is a handler with a stopped clock serving blob URLs under
// publicURL, on o.Store or else a disk store in a temporary directory.
// o's Tokens, BlobKey, PublicURL and Now are filled in; the rest is the
// caller's.
func testService(t testing.TB, publicURL string, o Options) (*Handler, *Tokens, *testclock.Clock) {
	t.Helper()
	clock := testclock.At(time.Date(2026, 12, 7, 5, 0, 0, 0, time.UTC))
	if o.Store == nil {
		store, err := OpenDisk(t.TempDir(), EvictionPolicy{MaxAge: 7 * 24 * time.Hour}, clock.Now, o.Log)
		if err != nil {
			t.Fatal(err)
		}
		o.Store = store
	}
	tokens, err := NewTokens(testKey, "ctl", clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	o.Tokens, o.BlobKey, o.PublicURL, o.Now = tokens, bytes.Repeat([]byte("b"), 32), publicURL, clock.Now
	h, err := NewHandler(o)
	if err != nil {
		t.Fatal(err)
	}
	return h, tokens, clock
}

func newHandlerWorld(t testing.TB, maxBytes int64) *handlerWorld {
	t.Helper()
	logs := &testlog.Buffer{}
	h, tokens, clock := testService(t, "http://cache.test", Options{Log: logs.Logger(slog.LevelInfo), MaxEntryBytes: maxBytes})
	return &handlerWorld{h: h, clock: clock, tokens: tokens, logs: logs, key: testKey}
}

func (w *handlerWorld) mint(t *testing.T, g Grant) string {
	t.Helper()
	tok, err := w.tokens.Mint("i-1", g, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func (w *handlerWorld) call(t *testing.T, token, method, body string) (int, map[string]any) {
	t.Helper()
	return w.callB(t, token, method, body)
}

func (w *handlerWorld) callB(t testing.TB, token, method, body string) (int, map[string]any) {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, TwirpPrefix+method, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	w.h.ServeHTTP(rec, r)
	var out map[string]any
	_ = json.Unmarshal(rec.Body.Bytes(), &out)
	return rec.Code, out
}

func (w *handlerWorld) blob(t *testing.T, method, rawURL string, body io.Reader, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(method, u.RequestURI(), body)
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	w.h.ServeHTTP(rec, r)
	return rec
}

var mainGrant = Grant{RepoID: 1, Repo: "o/a", Write: "refs/heads/main", Read: []string{"refs/heads/main"}}

// TestHandlerBlocks saves an archive the way the storage SDK does above
// 128 MiB (staged blocks, then a block list), which the 1 MB acceptance
// test never reaches, and reads it back.
func TestHandlerBlocks(t *testing.T) {
	w := newHandlerWorld(t, 0)
	tok := w.mint(t, mainGrant)
	code, out := w.call(t, tok, "CreateCacheEntry", `{"key":"k1","version":"v1"}`)
	if code != 200 || out["ok"] != true {
		t.Fatalf("create: %d %v", code, out)
	}
	up := out["signed_upload_url"].(string)
	for i, part := range []string{"bbb", "aaa"} {
		id := []string{"QkxLMg==", "QkxLMQ=="}[i]
		rec := w.blob(t, http.MethodPut, up+"&comp=block&blockid="+url.QueryEscape(id), strings.NewReader(part), nil)
		if rec.Code != http.StatusCreated {
			t.Fatalf("put block: %d %s", rec.Code, rec.Body)
		}
	}
	list := `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><BlockList><Latest>QkxLMQ==</Latest><Latest>QkxLMg==</Latest></BlockList>`
	if rec := w.blob(t, http.MethodPut, up+"&comp=blocklist", strings.NewReader(list), nil); rec.Code != http.StatusCreated {
		t.Fatalf("put block list: %d %s", rec.Code, rec.Body)
	}
	if code, out := w.call(t, tok, "FinalizeCacheEntryUpload", `{"key":"k1","version":"v1","size_bytes":"6"}`); code != 200 || out["entry_id"] == "" {
		t.Fatalf("finalize: %d %v", code, out)
	}
	code, out = w.call(t, tok, "GetCacheEntryDownloadURL", `{"key":"k","restore_keys":["k"],"version":"v1"}`)
	if code != 200 || out["matched_key"] != "k1" {
		t.Fatalf("lookup: %d %v", code, out)
	}
	down := out["signed_download_url"].(string)
	rec := w.blob(t, http.MethodGet, down, nil, nil)
	if rec.Code != 200 || rec.Body.String() != "aaabbb" || rec.Header().Get("Content-Length") != "6" {
		t.Fatalf("download: %d %q %v", rec.Code, rec.Body, rec.Header())
	}
	// The download URL does not upload, and expires.
	if rec := w.blob(t, http.MethodPut, down, strings.NewReader("x"), map[string]string{"x-ms-blob-type": "BlockBlob"}); rec.Code != http.StatusForbidden {
		t.Fatalf("upload through a download URL: %d", rec.Code)
	}
	w.clock.Advance(DefaultURLTTL + time.Second)
	if rec := w.blob(t, http.MethodGet, down, nil, nil); rec.Code != http.StatusForbidden {
		t.Fatalf("expired URL: %d", rec.Code)
	}
}

// TestHandlerRefusals: bad input gets a clear status and message, a
// structured log line, and changes nothing.
func TestHandlerRefusals(t *testing.T) {
	w := newHandlerWorld(t, 10)
	tok := w.mint(t, mainGrant)
	instKey, _ := metadata.NewTokens(w.key, "ctl", w.clock.Now)
	instanceToken, err := instKey.Mint("i-1", "pool", 1, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := NewTokens(bytes.Repeat([]byte("x"), 32), "ctl", w.clock.Now)
	forged, _ := other.Mint("i-1", mainGrant, time.Hour)
	readOnly := w.mint(t, Grant{RepoID: 1, Read: []string{"refs/heads/main"}})

	twirp := []struct {
		name, token, method, body string
		status                    int
		code                      string
	}{
		{"no token", "", "CreateCacheEntry", `{"key":"k","version":"v"}`, 401, "unauthenticated"},
		{"an instance token is not a cache token", instanceToken, "CreateCacheEntry", `{"key":"k","version":"v"}`, 401, "unauthenticated"},
		{"another key's token", forged, "CreateCacheEntry", `{"key":"k","version":"v"}`, 401, "unauthenticated"},
		{"read-only token writes nothing", readOnly, "CreateCacheEntry", `{"key":"k","version":"v"}`, 403, "permission_denied"},
		{"unknown method", tok, "DeleteCacheEntry", `{}`, 404, "bad_route"},
		{"bad JSON", tok, "CreateCacheEntry", `{"key":`, 400, "malformed"},
		{"comma in key", tok, "CreateCacheEntry", `{"key":"a,b","version":"v"}`, 400, "invalid_argument"},
		{"no version", tok, "GetCacheEntryDownloadURL", `{"key":"a"}`, 400, "invalid_argument"},
		{"finalize of nothing", tok, "FinalizeCacheEntryUpload", `{"key":"a","version":"v","size_bytes":"1"}`, 404, "not_found"},
		{"finalize over the limit", tok, "FinalizeCacheEntryUpload", `{"key":"a","version":"v","size_bytes":"11"}`, 400, "invalid_argument"},
		{"size not a number", tok, "FinalizeCacheEntryUpload", `{"key":"a","version":"v","size_bytes":"x"}`, 400, "malformed"},
	}
	for _, tt := range twirp {
		t.Run(tt.name, func(t *testing.T) {
			w.logs.Reset()
			code, out := w.call(t, tt.token, tt.method, tt.body)
			if code != tt.status || out["code"] != tt.code || out["msg"] == "" {
				t.Fatalf("= %d %v, want %d %s", code, out, tt.status, tt.code)
			}
			if len(w.logs.Lines(t, map[string]any{"msg": "cache: call refused", "code": tt.code})) != 1 {
				t.Fatalf("no structured refusal line:\n%s", w.logs.String())
			}
		})
	}
	if st := w.h.o.Store.Stats(); st.Entries != 0 {
		t.Fatalf("refusals changed the store: %+v", st)
	}

	_, out := w.call(t, tok, "CreateCacheEntry", `{"key":"k","version":"v"}`)
	up := out["signed_upload_url"].(string)
	u, _ := url.Parse(up)
	q := u.Query()
	q.Set("repo", "2") // another repository's entry: the signature no longer holds
	tampered := "http://cache.test" + u.Path + "?" + q.Encode()
	blobs := []struct {
		name, method, url string
		body              string
		hdr               map[string]string
		status            int
	}{
		{"tampered URL", http.MethodPut, tampered, "x", map[string]string{"x-ms-blob-type": "BlockBlob"}, 403},
		{"not a block blob", http.MethodPut, up, "x", map[string]string{"x-ms-blob-type": "AppendBlob"}, 400},
		{"over the size limit", http.MethodPut, up, "0123456789x", map[string]string{"x-ms-blob-type": "BlockBlob"}, 413},
		{"bad comp", http.MethodPut, up + "&comp=appendblock", "x", nil, 400},
		{"block list of unstaged blocks", http.MethodPut, up + "&comp=blocklist", "<BlockList><Latest>eA==</Latest></BlockList>", nil, 400},
		{"block list not XML", http.MethodPut, up + "&comp=blocklist", "{", nil, 400},
		{"no such entry", http.MethodGet, "http://cache.test" + BlobPrefix + "x", "", nil, 404},
		{"download of a pending entry", http.MethodGet, strings.Replace(up, "op=u", "op=d", 1), "", nil, 403},
	}
	for _, tt := range blobs {
		t.Run(tt.name, func(t *testing.T) {
			w.logs.Reset()
			rec := w.blob(t, tt.method, tt.url, strings.NewReader(tt.body), tt.hdr)
			if rec.Code != tt.status || rec.Header().Get("x-ms-error-code") == "" {
				t.Fatalf("= %d %s, want %d", rec.Code, rec.Body, tt.status)
			}
			if len(w.logs.Lines(t, map[string]any{"msg": "cache: blob request refused"})) != 1 {
				t.Fatalf("no structured refusal line:\n%s", w.logs.String())
			}
		})
	}
	// Nothing of the refused uploads was kept: finalizing finds no bytes.
	if code, out := w.call(t, tok, "FinalizeCacheEntryUpload", `{"key":"k","version":"v","size_bytes":"1"}`); code != 400 {
		t.Fatalf("finalize after refused uploads: %d %v", code, out)
	}
}

func TestTokens(t *testing.T) {
	clock := testclock.At(time.Date(2026, 12, 7, 5, 0, 0, 0, time.UTC))
	tk, err := NewTokens(bytes.Repeat([]byte("k"), 32), "ctl", clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tk.Mint("i-1", mainGrant, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c, err := tk.Verify(tok)
	if err != nil || c.RepoID != 1 || c.Write != "refs/heads/main" || c.Instance != "i-1" {
		t.Fatalf("verify = %+v %v", c, err)
	}
	clock.Advance(time.Hour + time.Minute)
	var te *metadata.TokenError
	if _, err := tk.Verify(tok); !errors.As(err, &te) || !te.Expired || !errors.Is(err, metadata.ErrInvalidToken) {
		t.Fatalf("expired token: %v", err)
	}
	if _, err := tk.Mint("i-1", Grant{RepoID: 1}, time.Hour); err == nil {
		t.Fatal("a grant reading nothing was minted")
	}
	if _, err := NewTokens([]byte("short"), "ctl", nil); err == nil {
		t.Fatal("a short key was accepted")
	}
}
