package cache

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// FuzzTwirp: whatever a runner sends to a twirp method, the answer is a
// twirp JSON body with a status below 500 — bad input is the caller's
// fault, never the service's — and a refused create stores nothing.
func FuzzTwirp(f *testing.F) {
	for _, seed := range []string{
		`{"key":"k","version":"v"}`,
		`{"key":"k","restore_keys":["a","b"],"version":"v"}`,
		`{"key":"k","version":"v","size_bytes":"12"}`,
		`{"key":"k","version":"v","size_bytes":12}`,
		`{"key":"","version":""}`, `{"key":"a,b"}`, `[]`, `null`, `{`, ``, `{"size_bytes":"-1"}`,
		`{"restore_keys":["1","2","3","4","5","6","7","8","9","10"],"key":"k","version":"v"}`,
	} {
		for _, m := range []string{"CreateCacheEntry", "FinalizeCacheEntryUpload", "GetCacheEntryDownloadURL"} {
			f.Add(m, seed)
		}
	}
	w := newHandlerWorld(f, 1<<20)
	tok, err := w.tokens.Mint("i-1", mainGrant, time.Hour)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, method, body string) {
		before := w.h.o.Store.Stats()
		r := httptest.NewRequest(http.MethodPost, TwirpPrefix+"CreateCacheEntry", strings.NewReader(body))
		r.URL.Path = TwirpPrefix + method
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Authorization", "Bearer "+tok)
		rec := httptest.NewRecorder()
		w.h.ServeHTTP(rec, r)
		if rec.Code >= 500 {
			t.Fatalf("%s %q = %d %s", method, body, rec.Code, rec.Body)
		}
		var out map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatalf("%s %q answered %d with no JSON: %q", method, body, rec.Code, rec.Body)
		}
		if after := w.h.o.Store.Stats(); after != before {
			t.Fatalf("%s %q changed the finalized entries: %+v -> %+v", method, body, before, after)
		}
	})
}
