package cache

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/runfleet/runfleet/internal/testclock"
)

// getParts fetches an entry's parts on their presigned GETs, with their
// signed headers (If-Match), in order, as the machine's agent does.
func getParts(list PartsResponse) ([]byte, error) {
	var all []byte
	for i, p := range list.Parts {
		req, _ := http.NewRequest(http.MethodGet, p.URL, nil)
		for k, v := range p.Headers {
			if k != "Host" {
				req.Header[k] = v
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("part %d: %s", i, resp.Status)
		}
		all = append(all, b...)
	}
	return all, nil
}

// bucketKeys lists the keys under prefix.
func bucketKeys(t testing.TB, client *s3.Client, bucket, prefix string) []string {
	t.Helper()
	out, err := client.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}

// partStore is a bucket-backed store: S3 (serve) or Dynamo (the function).
type partStore interface {
	Store
	PartUploader
	PartDownloader
	DownloadURLer
	parts() partBucket
}

// partWorlds are both bucket-backed stores on moto (and DynamoDB Local),
// each with its clock, evicting by age after a day.
func partWorlds(t *testing.T) map[string]func(t *testing.T) (partStore, *testclock.Clock, *s3.Client, string) {
	return map[string]func(t *testing.T) (partStore, *testclock.Clock, *s3.Client, string){
		"s3": func(t *testing.T) (partStore, *testclock.Clock, *s3.Client, string) {
			client, bucket := testBucket(t)
			clock := testclock.At(time.Date(2026, 12, 7, 5, 0, 0, 0, time.UTC))
			st, err := OpenS3(context.Background(), client, bucket, "c/", EvictionPolicy{MaxAge: 24 * time.Hour}, clock.Now, nil)
			if err != nil {
				t.Fatal(err)
			}
			return st, clock, client, bucket
		},
		"dynamo": func(t *testing.T) (partStore, *testclock.Clock, *s3.Client, string) {
			w := newDynamoWorld(t)
			return w.store(EvictionPolicy{MaxAge: 24 * time.Hour}), w.clock, w.s3, w.bucket
		},
	}
}

// An entry kept in parts, on both bucket-backed stores: parts uploaded
// out of order and one of them again, the completion's order is the
// archive's, objects the order does not name are deleted, the limit holds
// across the parts, a part changed after the save fails the restore, and
// eviction removes every part.
func TestEntryInParts(t *testing.T) {
	for name, open := range partWorlds(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			st, clock, client, bucket := open(t)
			ref := Ref{RepoID: 1, Scope: "refs/heads/main", Key: "k", Version: "v"}
			e, err := st.Reserve(ctx, ref)
			if err != nil {
				t.Fatal(err)
			}
			a, b, c := bytes.Repeat([]byte("a"), 3000), bytes.Repeat([]byte("b"), 2000), []byte("dropped")
			putPart(t, st, e.ID, 3, c)
			putPart(t, st, e.ID, 2, []byte("a first try of part 2"))
			putPart(t, st, e.ID, 1, b)
			putPart(t, st, e.ID, 2, a) // the retry replaces it
			// The limit counts the parts there, a part sent again once.
			if _, _, err := st.PresignPart(ctx, e.ID, 4, 6000, 10000, time.Hour); !errors.Is(err, ErrTooLarge) {
				t.Fatalf("a part over the entry's limit with the others: %v", err)
			}
			if _, _, err := st.PresignPart(ctx, e.ID, 2, 7900, 10000, time.Hour); err != nil {
				t.Fatalf("part 2 again, within the limit: %v", err)
			}
			for _, bad := range [][]int32{{2, 2, 1}, {2, 1, 9}, {}} {
				if err := st.CompleteParts(ctx, e.ID, bad, 1<<20); !errors.Is(err, ErrInvalid) {
					t.Errorf("complete %v = %v, want invalid", bad, err)
				}
			}
			if err := st.CompleteParts(ctx, e.ID, []int32{2, 1}, 4999); !errors.Is(err, ErrTooLarge) {
				t.Fatalf("complete over the limit: %v", err)
			}
			if err := st.CompleteParts(ctx, e.ID, []int32{2, 1}, 1<<20); err != nil {
				t.Fatal(err)
			}
			if got := bucketKeys(t, client, bucket, st.parts().partsDir(e.ID)); len(got) != 2 {
				t.Fatalf("parts after completion: %v (part 3 is not the archive's)", got)
			}
			want := append(append([]byte(nil), a...), b...)
			if _, err := st.Finalize(ctx, ref, int64(len(want))); err != nil {
				t.Fatal(err)
			}
			if _, err := st.DownloadURL(ctx, e.ID, time.Hour); !errors.Is(err, ErrInParts) {
				t.Fatalf("DownloadURL = %v, want ErrInParts", err)
			}
			list, err := st.DownloadParts(ctx, e.ID, time.Hour)
			if err != nil || list.Size != int64(len(want)) || len(list.Parts) != 2 {
				t.Fatalf("DownloadParts = %+v, %v", list, err)
			}
			if got, err := getParts(list); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("restore: %d bytes, same %v, %v", len(got), bytes.Equal(got, want), err)
			}
			if s, ok := st.(*S3); ok {
				// serve streams it to a client without the agent.
				rc, size, err := s.Open(ctx, e.ID)
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(rc)
				rc.Close()
				if err != nil || size != int64(len(want)) || !bytes.Equal(got, want) {
					t.Fatalf("serve's stream: %d bytes of %d, same %v, %v", len(got), size, bytes.Equal(got, want), err)
				}
			}

			// Part 1 changed after the save (same size): its pinned GET is
			// refused, and so is serve's stream of the entry.
			if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String(st.parts().partKey(e.ID, 1)), Body: bytes.NewReader(bytes.Repeat([]byte("x"), len(b)))}); err != nil {
				t.Fatal(err)
			}
			if got, err := getParts(list); err == nil {
				t.Fatalf("a restore of a changed part got %d bytes", len(got))
			}
			if s, ok := st.(*S3); ok {
				rc, _, err := s.Open(ctx, e.ID)
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(rc)
				rc.Close()
				if err == nil {
					t.Fatalf("serve streamed %d bytes of a changed entry", len(got))
				}
			}

			// Eviction by age deletes the entry's parts with it.
			clock.Advance(25 * time.Hour)
			if es, err := st.Evict(ctx); err != nil || es.Entries != 1 {
				t.Fatalf("evict = %+v %v", es, err)
			}
			if got := bucketKeys(t, client, bucket, "c/"); len(got) != 0 {
				t.Fatalf("eviction left %v", got)
			}
		})
	}
}

// A single-shot upload is the entry's one object, restored by one
// presigned GET as entries always were; the part count is held.
func TestEntryWholeObjectAndPartLimit(t *testing.T) {
	for name, open := range partWorlds(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			st, _, client, bucket := open(t)
			ref := Ref{RepoID: 1, Scope: "refs/heads/main", Key: "whole", Version: "v"}
			e, err := st.Reserve(ctx, ref)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := st.PresignPart(ctx, e.ID, MaxEntryParts+1, 1, 1<<20, time.Hour); !errors.Is(err, ErrInvalid) {
				t.Fatalf("part %d = %v, want invalid", MaxEntryParts+1, err)
			}
			order := make([]int32, MaxEntryParts+1)
			for i := range order {
				order[i] = int32(i + 1)
			}
			if err := st.CompleteParts(ctx, e.ID, order, 1<<20); !errors.Is(err, ErrInvalid) {
				t.Fatalf("%d parts = %v, want invalid", len(order), err)
			}
			body := []byte("the whole archive")
			putPart(t, st, e.ID, WholeObject, body)
			if err := st.CompleteWhole(ctx, e.ID, 1<<20); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Finalize(ctx, ref, int64(len(body))); err != nil {
				t.Fatal(err)
			}
			u, err := st.DownloadURL(ctx, e.ID, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			if got := get(t, u); !bytes.Equal(got, body) {
				t.Fatalf("restore = %q", got)
			}
			if got := bucketKeys(t, client, bucket, "c/parts/"); len(got) != 0 {
				t.Fatalf("a single-shot upload made parts: %v", got)
			}
		})
	}
}

// The lookup of an entry in parts hands out runfleet's own signed URL with
// PartsHint; its parts call answers presigned GETs of the parts in order;
// a client without the agent GETting it is streamed the archive by serve
// (S3) and refused clearly by the function (Dynamo), which passes no byte.
func TestHandlerHandsOutAnEntryInParts(t *testing.T) {
	for name, open := range partWorlds(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			st, _, _, _ := open(t)
			srv := httptest.NewUnstartedServer(nil)
			srv.Start()
			t.Cleanup(srv.Close)
			h, tokens, _ := testService(t, srv.URL, Options{Store: st})
			srv.Config.Handler = h
			main := "refs/heads/main"
			ref := Ref{RepoID: 1, Scope: main, Key: "k", Version: "v"}
			e, err := st.Reserve(ctx, ref)
			if err != nil {
				t.Fatal(err)
			}
			putPart(t, st, e.ID, 1, []byte("world"))
			putPart(t, st, e.ID, 2, []byte("hello "))
			if err := st.CompleteParts(ctx, e.ID, []int32{2, 1}, 1<<20); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Finalize(ctx, ref, 11); err != nil {
				t.Fatal(err)
			}
			tok, err := tokens.Mint("runner-1", Grant{RepoID: 1, Write: main, Read: []string{main}}, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			req, _ := http.NewRequest(http.MethodPost, srv.URL+TwirpPrefix+"GetCacheEntryDownloadURL", strings.NewReader(`{"key":"k","version":"v"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+tok)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var found lookupResponse
			_ = json.NewDecoder(resp.Body).Decode(&found)
			resp.Body.Close()
			u := found.SignedDownloadURL
			if !found.OK || !strings.HasPrefix(u, srv.URL+BlobPrefix) || !strings.HasSuffix(u, "&"+PartsHint) {
				t.Fatalf("lookup = %+v", found)
			}

			resp, err = http.Get(u + "&runfleet=parts")
			if err != nil {
				t.Fatal(err)
			}
			var list PartsResponse
			_ = json.NewDecoder(resp.Body).Decode(&list)
			resp.Body.Close()
			if got, err := getParts(list); err != nil || string(got) != "hello world" || list.Size != 11 {
				t.Fatalf("parts call: %q %v (%+v)", got, err, list)
			}
			resp, err = http.Get(strings.Replace(u, "sig=", "sig=0", 1) + "&runfleet=parts")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				t.Fatalf("a parts call on a bad signature: %s", resp.Status)
			}

			resp, err = http.Get(u)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch name {
			case "s3":
				if resp.StatusCode != http.StatusOK || string(body) != "hello world" {
					t.Fatalf("serve's GET: %s %q", resp.Status, body)
				}
			case "dynamo":
				if resp.StatusCode != http.StatusNotImplemented || !strings.Contains(string(body), "cache agent") {
					t.Fatalf("the function's GET: %s %q", resp.Status, body)
				}
			}
		})
	}
}

// A save abandoned mid-upload: when its stale reservation is replaced (an
// hour on), its parts are deleted with it, on both bucket stores.
func TestAbandonedPartsGoWithTheReservation(t *testing.T) {
	for name, open := range partWorlds(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			st, clock, client, bucket := open(t)
			ref := Ref{RepoID: 1, Scope: "refs/heads/main", Key: "k", Version: "v"}
			dead, err := st.Reserve(ctx, ref)
			if err != nil {
				t.Fatal(err)
			}
			putPart(t, st, dead.ID, 1, []byte("half"))
			putPart(t, st, dead.ID, 2, []byte("an upload"))
			clock.Advance(time.Hour)
			if _, err := st.Reserve(ctx, ref); err != nil {
				t.Fatalf("reserve over a stale reservation: %v", err)
			}
			if got := bucketKeys(t, client, bucket, st.parts().partsDir(dead.ID)); len(got) != 0 {
				t.Fatalf("the abandoned parts are left: %v", got)
			}
		})
	}
}
