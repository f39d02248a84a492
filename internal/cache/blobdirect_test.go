package cache

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
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
		// A block in one call: parts 3, 4, 5 of PieceBytes (the last
		// shorter), each its own length signed; the count must agree.
		h.o.MaxEntryBytes = 3 * PieceBytes
		w := post(h, u+"&runfleet=presign&part=3&size="+strconv.Itoa(2*PieceBytes+5)+"&pieces=3")
		var pr PresignResponse
		if err := json.Unmarshal(w.Body.Bytes(), &pr); w.Code != http.StatusOK || err != nil || len(pr.Parts) != 3 ||
			pr.Parts[0].Part != 3 || pr.Parts[2].Part != 5 || pr.Parts[1].Size != PieceBytes || pr.Parts[2].Size != 5 ||
			!strings.Contains(pr.Parts[2].URL, "/parts/") || pr.Parts[2].Headers["Content-Length"][0] != "5" {
			t.Fatalf("a block's presign = %d %s", w.Code, w.Body)
		}
		if w := post(h, u+"&runfleet=presign&part=3&size="+strconv.Itoa(2*PieceBytes+5)+"&pieces=2"); w.Code != http.StatusBadRequest {
			t.Fatalf("a block's presign with the wrong count = %d %s", w.Code, w.Body)
		}
		if w := post(h, u+"&runfleet=presign&part=3&size="+strconv.Itoa(3*PieceBytes+1)+"&pieces=4"); w.Code != http.StatusRequestEntityTooLarge {
			t.Fatalf("a block over the limit = %d %s", w.Code, w.Body)
		}
		if w := post(h, u+"&runfleet=presign&part="+strconv.Itoa(MaxEntryParts)+"&size="+strconv.Itoa(2*PieceBytes)+"&pieces=2"); w.Code != http.StatusBadRequest {
			t.Fatalf("a block past the part cap = %d %s", w.Code, w.Body)
		}
		h.o.MaxEntryBytes = 100
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
