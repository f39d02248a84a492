package cache

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The direct upload's calls: refused by a store that takes no direct
// uploads; on S3, a part over the entry's limit is refused before a
// byte moves, and a completion names only uploaded parts.
func TestDirectUploadCalls(t *testing.T) {
	post := func(h *Handler, u string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, u, strings.NewReader(`{"parts":[2,1]}`))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	reserve := func(t *testing.T, h *Handler) string {
		t.Helper()
		e, err := h.o.Store.Reserve(context.Background(), Ref{RepoID: 1, Scope: "refs/heads/main", Key: "k", Version: "v"})
		if err != nil {
			t.Fatal(err)
		}
		return h.signedURL("u", e.ID, 1)
	}
	t.Run("disk", func(t *testing.T) {
		h, _, _ := testService(t, "http://cache.test", Options{})
		if w := post(h, reserve(t, h)+"&runfleet=presign&part=1&size=10"); w.Code != http.StatusNotImplemented {
			t.Fatalf("presign on disk = %d", w.Code)
		}
	})
	t.Run("s3", func(t *testing.T) {
		client, bucket := testBucket(t)
		st, err := OpenS3(context.Background(), client, bucket, "", EvictionPolicy{}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		h, _, _ := testService(t, "http://cache.test", Options{Store: st, MaxEntryBytes: 100})
		u := reserve(t, h)
		if w := post(h, u+"&runfleet=presign&part=1&size=101"); w.Code != http.StatusRequestEntityTooLarge {
			t.Fatalf("a part over the limit = %d %s", w.Code, w.Body)
		}
		if w := post(h, u+"&runfleet=presign&part=0&size=1"); w.Code != http.StatusBadRequest {
			t.Fatalf("part 0 = %d", w.Code)
		}
		// A plain PutObject of the entry's part object, its length signed.
		if w := post(h, u+"&runfleet=presign&part=1&size=10"); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "/parts/") ||
			!strings.Contains(w.Body.String(), "content-length") || strings.Contains(w.Body.String(), "uploadId") {
			t.Fatalf("presign = %d %s", w.Code, w.Body)
		}
		// whole=1: the single shot's one object.
		if w := post(h, u+"&runfleet=presign&whole=1&size=10"); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "/blobs/") {
			t.Fatalf("presign of the whole object = %d %s", w.Code, w.Body)
		}
		if w := post(h, u+"&runfleet=complete"); w.Code != http.StatusBadRequest {
			t.Fatalf("completing parts never uploaded = %d %s", w.Code, w.Body)
		}
		bad := strings.Replace(u, "sig=", "sig=0", 1)
		if w := post(h, bad+"&runfleet=presign&part=1&size=1"); w.Code != http.StatusForbidden {
			t.Fatalf("a forged URL = %d", w.Code)
		}
	})
}
