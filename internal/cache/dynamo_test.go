package cache

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/runfleet/runfleet/internal/testclock"
	"github.com/runfleet/runfleet/internal/testenv"
)

// dynamoWorld is a cache index table on DynamoDB Local and a bucket on
// moto; each store it opens plays one Lambda instance.
type dynamoWorld struct {
	t      *testing.T
	clock  *testclock.Clock
	s3     *s3.Client
	bucket string
	table  string
}

func newDynamoWorld(t *testing.T) *dynamoWorld {
	t.Helper()
	client, bucket := testBucket(t)
	table := testenv.UniqueName(t, "cache")
	if err := CreateDynamoTable(context.Background(), testenv.DynamoDB(t), table); err != nil {
		t.Fatal(err)
	}
	return &dynamoWorld{t: t, clock: testclock.At(time.Date(2026, 12, 7, 5, 0, 0, 0, time.UTC)), s3: client, bucket: bucket, table: table}
}

func (w *dynamoWorld) store(p EvictionPolicy) *Dynamo {
	w.t.Helper()
	st, err := NewDynamo(DynamoOptions{DB: testenv.DynamoDB(w.t), Table: w.table, S3: w.s3, Bucket: w.bucket, Prefix: "c/", Policy: p, Now: w.clock.Now})
	if err != nil {
		w.t.Fatal(err)
	}
	return st
}

// putPart uploads b as part n of entry id on the URL the store presigns,
// as the machine's agent does.
func putPart(t testing.TB, st PartUploader, id int64, n int32, b []byte) {
	t.Helper()
	if err := tryPutPart(st, id, n, b); err != nil {
		t.Fatal(err)
	}
}

func tryPutPart(st PartUploader, id int64, n int32, b []byte) error {
	u, hdr, err := st.PresignPart(context.Background(), id, n, int64(len(b)), 20<<20, time.Hour)
	if err != nil {
		return err
	}
	return putPresigned(u, hdr, b)
}

// putPresigned PUTs b on a presigned URL with its signed headers.
func putPresigned(u string, hdr http.Header, b []byte) error {
	req, _ := http.NewRequest(http.MethodPut, u, bytes.NewReader(b))
	for k, v := range hdr {
		if k != "Host" {
			req.Header[k] = v
		}
	}
	req.ContentLength = int64(len(b))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("PUT: %s", resp.Status)
	}
	return nil
}

func get(t *testing.T, u string) []byte {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: %s", resp.Status)
	}
	return b
}

func TestDynamoStoreSaveAndRestore(t *testing.T) {
	ctx := context.Background()
	w := newDynamoWorld(t)
	// Two stores on one table and bucket: two Lambda instances.
	a, b := w.store(EvictionPolicy{}), w.store(EvictionPolicy{})
	main := "refs/heads/main"
	ref := Ref{RepoID: 1, Scope: main, Key: "linux-deps-abc", Version: "v"}
	e, err := a.Reserve(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Reserve(ctx, ref); !errors.Is(err, ErrExists) {
		t.Fatalf("a second reservation on another instance: %v", err)
	}
	if _, err := a.PutBlob(ctx, e.ID, bytes.NewReader([]byte("x")), 1, 10); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bytes through the function: %v", err)
	}
	if _, err := a.Finalize(ctx, ref, 1); !errors.Is(err, ErrInvalid) {
		t.Fatalf("finalize before any upload: %v", err)
	}
	first := make([]byte, minPartBytes)
	_, _ = rand.Read(first)
	last := []byte("the last part")
	// The parts are presigned by different instances; their numbers are
	// names, the completion's order is the archive's.
	putPart(t, b, e.ID, 1, last)
	putPart(t, a, e.ID, 2, first)
	if _, _, err := a.PresignPart(ctx, e.ID, 3, 20<<20, 20<<20, time.Hour); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a part over the entry's limit: %v", err)
	}
	if err := b.CompleteParts(ctx, e.ID, []int32{2, 1, 3}, 20<<20); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a part never uploaded: %v", err)
	}
	if err := b.CompleteParts(ctx, e.ID, []int32{2, 1}, 20<<20); err != nil {
		t.Fatal(err)
	}
	want := append(append([]byte(nil), first...), last...)
	if _, err := a.Finalize(ctx, ref, int64(len(want))+1); !errors.Is(err, ErrInvalid) {
		t.Fatalf("finalize with a wrong size: %v", err)
	}
	if _, err := a.Finalize(ctx, ref, int64(len(want))); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Finalize(ctx, ref, int64(len(want))); !errors.Is(err, ErrNotPending) {
		t.Fatalf("a second finalize: %v", err)
	}
	if _, _, err := a.PresignPart(ctx, e.ID, 1, 1, 20<<20, time.Hour); !errors.Is(err, ErrNotPending) {
		t.Fatalf("a part of a finalized entry: %v", err)
	}
	w.clock.Advance(2 * time.Hour)
	if _, err := b.Reserve(ctx, ref); !errors.Is(err, ErrExists) {
		t.Fatalf("a save over a finalized entry: %v", err)
	}

	for _, c := range []struct {
		name   string
		repo   int64
		scopes []string
		keys   []string
		ok     bool
	}{
		{"exact", 1, []string{main}, []string{"linux-deps-abc"}, true},
		{"restore key prefix", 1, []string{"refs/heads/feature", main}, []string{"linux-deps-xyz", "linux-deps-"}, true},
		{"another version", 1, []string{main}, []string{"linux-deps-abc"}, false},
		{"a scope not read", 1, []string{"refs/heads/feature"}, []string{"linux-deps-"}, false},
		{"another repository", 2, []string{main}, []string{"linux-deps-abc", "linux-"}, false},
	} {
		version := "v"
		if c.name == "another version" {
			version = "w"
		}
		got, ok, err := b.Lookup(ctx, c.repo, c.scopes, c.keys, version)
		if err != nil || ok != c.ok || (ok && got.ID != e.ID) {
			t.Errorf("%s: lookup = %+v %v %v", c.name, got, ok, err)
		}
	}
	if _, err := b.DownloadURL(ctx, e.ID, time.Hour); !errors.Is(err, ErrInParts) {
		t.Fatalf("DownloadURL of an entry in parts = %v, want ErrInParts", err)
	}
	if _, _, err := b.Open(ctx, e.ID); !errors.Is(err, ErrNeedsAgent) {
		t.Fatalf("Open through the function = %v, want ErrNeedsAgent", err)
	}
	list, err := b.DownloadParts(ctx, e.ID, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := getParts(list); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("download: %d bytes, same %v, %v", len(got), bytes.Equal(got, want), err)
	}
}

func TestDynamoStoreFirstWriterWinsUnderConcurrency(t *testing.T) {
	ctx := context.Background()
	w := newDynamoWorld(t)
	ref := Ref{RepoID: 7, Scope: "refs/heads/main", Key: "k", Version: "v"}
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		st := w.store(EvictionPolicy{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = st.Reserve(ctx, ref)
		}()
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, ErrExists):
			t.Fatalf("reserve: %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d reservations won, want 1", won)
	}
}

func TestDynamoStoreStaleReservationAndEviction(t *testing.T) {
	ctx := context.Background()
	w := newDynamoWorld(t)
	st := w.store(EvictionPolicy{MaxAge: 24 * time.Hour, PendingTTL: time.Hour})
	ref := Ref{RepoID: 3, Scope: "refs/heads/main", Key: "k", Version: "v"}
	dead, err := st.Reserve(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	putPart(t, st, dead.ID, 1, []byte("half an upload"))
	w.clock.Advance(time.Hour)
	// A runner died mid-upload an hour ago: the key is free again, and the
	// old reservation's upload is gone with it.
	e, err := st.Reserve(ctx, ref)
	if err != nil {
		t.Fatalf("reserve over a stale reservation: %v", err)
	}
	if _, _, err := st.PresignPart(ctx, dead.ID, 2, 1, 20<<20, time.Hour); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the replaced reservation still takes parts: %v", err)
	}
	if got := bucketKeys(t, w.s3, w.bucket, st.parts().partsDir(dead.ID)); len(got) != 0 {
		t.Fatalf("the replaced reservation's parts are left: %v", got)
	}
	putPart(t, st, e.ID, 1, []byte("archive"))
	if err := st.CompleteParts(ctx, e.ID, []int32{1}, 20<<20); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Finalize(ctx, ref, 7); err != nil {
		t.Fatal(err)
	}
	other := Ref{RepoID: 3, Scope: "refs/heads/main", Key: "pending", Version: "v"}
	if _, err := st.Reserve(ctx, other); err != nil {
		t.Fatal(err)
	}
	if es, err := st.Evict(ctx); err != nil || es.Entries != 0 {
		t.Fatalf("evict while everything is young = %+v %v", es, err)
	}
	if got := st.Stats(); got.Entries != 1 || got.Bytes != 7 {
		t.Fatalf("stats = %+v", got)
	}
	// A read keeps an entry: 20 h later it is read, 20 h after that it is
	// 20 h since the read and stays; the pending one is stale and goes.
	w.clock.Advance(20 * time.Hour)
	if _, ok, err := st.Lookup(ctx, 3, []string{"refs/heads/main"}, []string{"k"}, "v"); !ok || err != nil {
		t.Fatalf("lookup: %v %v", ok, err)
	}
	w.clock.Advance(20 * time.Hour)
	if es, err := st.Evict(ctx); err != nil || es.Entries != 1 || es.Bytes != 0 {
		t.Fatalf("evict the stale reservation = %+v %v", es, err)
	}
	w.clock.Advance(5 * time.Hour)
	if es, err := st.Evict(ctx); err != nil || es.Entries != 1 || es.Bytes != 7 {
		t.Fatalf("evict by age = %+v %v", es, err)
	}
	if _, ok, _ := st.Lookup(ctx, 3, []string{"refs/heads/main"}, []string{"k"}, "v"); ok {
		t.Fatal("an evicted entry is found")
	}
	if got := bucketKeys(t, w.s3, w.bucket, "c/"); len(got) != 0 {
		t.Fatalf("the evicted entries left objects: %v", got)
	}
	// The key is free again.
	if _, err := st.Reserve(ctx, ref); err != nil {
		t.Fatal(err)
	}
}

// saveParts reserves ref, uploads b as its one part and finalizes it.
func saveParts(t *testing.T, st *Dynamo, ref Ref, b []byte) Entry {
	t.Helper()
	ctx := context.Background()
	e, err := st.Reserve(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	putPart(t, st, e.ID, 1, b)
	if err := st.CompleteParts(ctx, e.ID, []int32{1}, 20<<20); err != nil {
		t.Fatal(err)
	}
	if e, err = st.Finalize(ctx, ref, int64(len(b))); err != nil {
		t.Fatal(err)
	}
	return e
}

// The index outlives neither its archive nor its age: an archive the
// bucket's lifecycle rule removed frees the key, and an entry past its TTL
// is not found even before DynamoDB deletes it.
func TestDynamoStoreFollowsTheBucketAndTheTTL(t *testing.T) {
	ctx := context.Background()
	w := newDynamoWorld(t)
	st := w.store(EvictionPolicy{MaxAge: 24 * time.Hour})
	main := []string{"refs/heads/main"}
	ref := Ref{RepoID: 4, Scope: main[0], Key: "deps-new", Version: "v"}
	e := saveParts(t, st, ref, []byte("archive"))
	if _, err := w.s3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &w.bucket, Key: aws.String(st.parts().partKey(e.ID, 1))}); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := st.Lookup(ctx, 4, main, []string{"deps-new"}, "v"); ok || err != nil {
		t.Fatalf("an entry without its archive is found: %v %v", ok, err)
	}
	saveParts(t, st, ref, []byte("archive again"))
	if got, ok, _ := st.Lookup(ctx, 4, main, []string{"deps-new"}, "v"); !ok || got.Size != 13 {
		t.Fatalf("the new save is not found: %+v %v", got, ok)
	}
	older := Ref{RepoID: 4, Scope: main[0], Key: "deps-old", Version: "v"}
	saveParts(t, st, older, []byte("x"))
	w.clock.Advance(23 * time.Hour)
	if _, ok, _ := st.Lookup(ctx, 4, main, []string{"deps-new"}, "v"); !ok {
		t.Fatal("an entry read within its age is gone")
	}
	w.clock.Advance(2 * time.Hour)
	if got, ok, _ := st.Lookup(ctx, 4, main, []string{"deps-"}, "v"); !ok || got.Key != "deps-new" {
		t.Fatalf("prefix lookup past deps-old's TTL = %+v %v, want deps-new (read 2 h ago)", got, ok)
	}
	if _, ok, _ := st.Lookup(ctx, 4, main, []string{"deps-old"}, "v"); ok {
		t.Fatal("an entry past its TTL is found")
	}
}

// The SDK sends 8 blocks at once, each maybe to another function instance:
// each part is its own object, so nothing is shared between the
// presigns to race for (no multipart upload), and every part is kept.
func TestDynamoStoreConcurrentFirstParts(t *testing.T) {
	ctx := context.Background()
	w := newDynamoWorld(t)
	ref := Ref{RepoID: 5, Scope: "refs/heads/main", Key: "k", Version: "v"}
	e, err := w.store(EvictionPolicy{}).Reserve(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	const n = 4
	part := make([]byte, minPartBytes)
	_, _ = rand.Read(part)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		st := w.store(EvictionPolicy{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = tryPutPart(st, e.ID, int32(i+1), part)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	st := w.store(EvictionPolicy{})
	if err := st.CompleteParts(ctx, e.ID, []int32{1, 2, 3, 4}, 100<<20); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Finalize(ctx, ref, n*int64(len(part))); err != nil {
		t.Fatal(err)
	}
	uploads, err := w.s3.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &w.bucket})
	if err != nil || len(uploads.Uploads) != 0 {
		t.Fatalf("multipart uploads: %d, %v; want none", len(uploads.Uploads), err)
	}
	if got := bucketKeys(t, w.s3, w.bucket, st.parts().partsDir(e.ID)); len(got) != n {
		t.Fatalf("parts in the bucket: %v", got)
	}
}
