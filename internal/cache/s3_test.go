package cache

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/cache/cachetest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/runfleet/runfleet/internal/testclock"
	"github.com/runfleet/runfleet/internal/testenv"
	"github.com/runfleet/runfleet/internal/testlog"
)

// testBucket is a new bucket on the moto server the test process shares.
func testBucket(t testing.TB) (*s3.Client, string) {
	t.Helper()
	client := s3.NewFromConfig(testenv.AWSConfig(t), func(o *s3.Options) { o.UsePathStyle = true })
	name := strings.ToLower(strings.ReplaceAll(testenv.UniqueName(t, "cache"), "_", "-"))
	if len(name) > 63 {
		name = name[len(name)-63:]
	}
	name = strings.Trim(name, "-")
	if _, err := client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: &name}); err != nil {
		t.Fatal(err)
	}
	return client, name
}

func TestS3Store(t *testing.T) {
	ctx := context.Background()
	client, bucket := testBucket(t)
	clock := testclock.At(time.Date(2026, 12, 7, 5, 0, 0, 0, time.UTC))
	st, err := OpenS3(ctx, client, bucket, "c/", EvictionPolicy{MaxBytes: 6 << 20}, clock.Now, nil)
	if err != nil {
		t.Fatal(err)
	}
	ref := Ref{RepoID: 1, Scope: "refs/heads/main", Key: "k", Version: "v"}
	e, err := st.Reserve(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Reserve(ctx, ref); !errors.Is(err, ErrExists) {
		t.Fatalf("second reserve: %v", err)
	}
	first := make([]byte, minPartBytes)
	_, _ = rand.Read(first)
	last := []byte("the last block")
	// Staged out of order, as the SDK's concurrent uploads arrive.
	if _, err := st.PutBlock(ctx, e.ID, "b2", bytes.NewReader(last), int64(len(last)), 10<<20); err != nil {
		t.Fatal(err)
	}
	if _, err := st.PutBlock(ctx, e.ID, "b1", bytes.NewReader(first), int64(len(first)), 10<<20); err != nil {
		t.Fatal(err)
	}
	if _, err := st.PutBlock(ctx, e.ID, "b3", strings.NewReader("x"), -1, 10<<20); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a block without a length: %v", err)
	}
	if _, err := st.PutBlock(ctx, e.ID, "b3", bytes.NewReader(first), int64(len(first)), int64(len(first))+10); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("blocks over the entry's limit: %v", err)
	}
	if err := st.CommitBlocks(ctx, e.ID, []string{"b2", "b1"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a short block before the last: %v", err)
	}
	if err := st.CommitBlocks(ctx, e.ID, []string{"b1", "b2"}); err != nil {
		t.Fatal(err)
	}
	want := append(append([]byte(nil), first...), last...)
	if _, err := st.Finalize(ctx, ref, int64(len(want))+1); !errors.Is(err, ErrInvalid) {
		t.Fatalf("finalize with a wrong size: %v", err)
	}
	if _, err := st.Finalize(ctx, ref, int64(len(want))); err != nil {
		t.Fatal(err)
	}
	got, ok, err := st.Lookup(ctx, 1, []string{"refs/heads/main"}, []string{"k"}, "v")
	if err != nil || !ok || got.ID != e.ID {
		t.Fatalf("lookup = %+v %v %v", got, ok, err)
	}
	u, err := st.DownloadURL(ctx, e.ID, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Equal(body, want) {
		t.Fatalf("presigned download = %d, %d bytes, same %v", resp.StatusCode, len(body), bytes.Equal(body, want))
	}
	// The staged blocks went at finalize.
	list, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: aws.String("c/staging/")})
	if err != nil || len(list.Contents) != 0 {
		t.Fatalf("staging after finalize: %d objects, %v", len(list.Contents), err)
	}

	// A second store on the bucket reads the index back.
	again, err := OpenS3(ctx, client, bucket, "c/", EvictionPolicy{MaxBytes: 6 << 20}, clock.Now, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := again.Lookup(ctx, 1, []string{"refs/heads/main"}, []string{"k"}, "v"); !ok {
		t.Fatal("a reopened store lost the entry")
	}

	// A newer entry over max_bytes evicts the older one, objects and all.
	clock.Advance(time.Minute)
	ref2 := Ref{RepoID: 1, Scope: "refs/heads/main", Key: "k2", Version: "v"}
	e2, _ := st.Reserve(ctx, ref2)
	if _, err := st.PutBlob(ctx, e2.ID, bytes.NewReader(first), int64(len(first)), 10<<20); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Finalize(ctx, ref2, int64(len(first))); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := st.Lookup(ctx, 1, []string{"refs/heads/main"}, []string{"k2"}, "v"); !ok {
		t.Fatal("the newer entry is missing")
	}
	if es, err := st.Evict(ctx); err != nil || es.Entries != 1 {
		t.Fatalf("evict = %+v %v", es, err)
	}
	if _, _, err := st.Open(ctx, e.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the evicted entry opens: %v", err)
	}
	if _, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: aws.String(st.blobKey(e.ID))}); err == nil {
		t.Fatal("the evicted archive is still in the bucket")
	}
}

// TestRealClientOnS3: GitHub's client saves through serve's handler into
// the S3 store and restores straight from the bucket (a presigned GET).
func TestRealClientOnS3(t *testing.T) {
	ctx := context.Background()
	client, bucket := testBucket(t)
	var logs testlog.Buffer
	cw := newCacheWorld(t, logs.Logger(slog.LevelInfo))
	st, err := OpenS3(ctx, client, bucket, "", EvictionPolicy{}, cw.clock.Now, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(nil)
	t.Cleanup(srv.Close)
	h, err := NewHandler(Options{Store: st, Tokens: cw.tokens, BlobKey: bytes.Repeat([]byte("b"), 32), PublicURL: srv.URL, Now: cw.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = h
	tok := cw.token(Job{RepoID: 1, Repo: "o/a", Ref: "refs/heads/main", DefaultBranch: "main"})
	ws := t.TempDir()
	sum := cachetest.WriteData(t, ws, 1<<20)
	if r := cw.run(srv.URL+"/", tok, ws, "save", "data", "s3-key"); !saved(r) {
		t.Fatalf("save: %s", r.Stdout)
	}
	cachetest.ClearData(t, ws)
	r := cw.run(srv.URL+"/", tok, ws, "restore", "data", "s3-", "s3-key")
	if got, ok := cachetest.ReadData(t, ws); matched(r) != "s3-key" || !ok || got != sum {
		t.Fatalf("restore from S3 matched %q:\n%s", matched(r), r.Stdout)
	}
}
