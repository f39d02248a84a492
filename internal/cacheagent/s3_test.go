package cacheagent

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/cache/cachetest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/runfleet/runfleet/internal/cache"
	"github.com/runfleet/runfleet/internal/testclock"
	"github.com/runfleet/runfleet/internal/testenv"
)

// motoStore is runfleet's S3 store on a new bucket of the moto server.
func motoStore(t testing.TB) (*cache.S3, *s3.Client, string) {
	t.Helper()
	client := s3.NewFromConfig(testenv.AWSConfig(t), func(o *s3.Options) { o.UsePathStyle = true })
	name := strings.Trim(strings.ToLower(strings.ReplaceAll(testenv.UniqueName(t, "agent"), "_", "-")), "-")
	if len(name) > 63 {
		name = strings.Trim(name[len(name)-63:], "-")
	}
	if _, err := client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: &name}); err != nil {
		t.Fatal(err)
	}
	clock := testclock.At(time.Date(2026, 12, 7, 5, 0, 0, 0, time.UTC))
	st, err := cache.OpenS3(context.Background(), client, name, "c/", cache.EvictionPolicy{}, clock.Now, nil)
	if err != nil {
		t.Fatal(err)
	}
	return st, client, name
}

// TestRealClientOnS3: the AWS path with GitHub's client — the agent sends
// the archive straight to the bucket (moto) on presigned URLs, the restore
// comes straight from the bucket, the bytes are the same; at 1 MB and 100
// MB (one Put Blob: one object, restored on one presigned GET) and 1 GB
// (10^9 bytes: fifteen blocks, 120 part objects of 8 MiB at most,
// restored by the agent fetching them in parallel).
func TestRealClientOnS3(t *testing.T) {
	st, client, bucket := motoStore(t)
	w := newAgentWorld(t, st, "", false)
	defer func() {
		if t.Failed() {
			t.Logf("logs:\n%s", w.logs.Tail(40))
		}
	}()
	w.box.set(w.job(cache.Job{RepoID: 1, Repo: "o/a", Ref: "refs/heads/main", DefaultBranch: "main"}))
	ws := t.TempDir()
	// The part objects each size becomes: the archive (random bytes, so
	// zstd keeps the size) is a few KB over the data, so 10^9 bytes are
	// fourteen blocks of 64 MiB (8 pieces each) and one of ~60 MB (8).
	for _, tc := range []struct{ size, parts int }{{1 << 20, 1}, {100 << 20, 1}, {1_000_000_000, 120}} {
		size := tc.size
		t.Run(fmt.Sprintf("%d MB", size/1_000_000), func(t *testing.T) {
			start := time.Now()
			key := fmt.Sprintf("deps-%d", size)
			before, parts, restored := w.metrics.Snapshot(), w.agent.Counts().DirectParts, w.agent.Counts().RestoredParts
			sum := cachetest.WriteData(t, ws, size)
			if r := w.run(ws, "save", "data", key); !saved(r) {
				t.Fatalf("save: %s", r.Stdout)
			}
			cachetest.ClearData(t, ws)
			if r := w.run(ws, "restore", "data", key); matched(r) != key {
				t.Fatalf("restore: %s", r.Stdout)
			}
			if got, _ := cachetest.ReadData(t, ws); got != sum {
				t.Fatal("restored other bytes")
			}
			cachetest.ClearData(t, ws)
			// The archive went to the bucket through the agent, not through
			// runfleet's blob endpoint: the uploads were presigned, and so
			// were the downloads (runfleet counts the bytes it presigned
			// parts for, none for one object's presigned GET).
			after, c := w.metrics.Snapshot(), w.agent.Counts()
			inParts, wantParts := size > 128<<20, int64(tc.parts)
			down, restoredParts := after.BytesDownloaded-before.BytesDownloaded, c.RestoredParts-restored
			if after.BytesUploaded <= before.BytesUploaded || c.DirectParts-parts != wantParts ||
				(inParts && (restoredParts != wantParts || down <= int64(size))) || (!inParts && (restoredParts != 0 || down != 0)) {
				t.Fatalf("metrics before %+v after %+v, agent %+v", before, after, c)
			}
			t.Logf("save and restore in %s", time.Since(start).Round(100*time.Millisecond))
		})
	}
	// No staging object was written: the parts were the archive's, and
	// none came through runfleet's blob endpoint.
	out, err := client.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: aws.String("c/staging/")})
	if err != nil || len(out.Contents) != 0 {
		t.Fatalf("staging objects: %v %v", out, err)
	}
}

// TestBlocksOutOfOrder: the SDK's blocks, arriving out of order as its 8
// concurrent uploads do, become the parts in the block list's order.
func TestBlocksOutOfOrder(t *testing.T) {
	st, client, bucket := motoStore(t)
	w := newAgentWorld(t, st, "", false)
	w.box.set(w.job(cache.Job{RepoID: 1, Repo: "o/a", Ref: "refs/heads/main", DefaultBranch: "main"}))
	ctx := context.Background()
	agent := httptest.NewServer(w.agent)
	t.Cleanup(agent.Close)

	twirp := func(method, body string) string {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, agent.URL+cache.TwirpPrefix+method, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s = %d %s", method, resp.StatusCode, b.String())
		}
		return b.String()
	}
	created := twirp("CreateCacheEntry", `{"key":"k","version":"v"}`)
	i := strings.Index(created, UploadPrefix)
	if i < 0 {
		t.Fatalf("the upload URL is not the agent's: %s", created)
	}
	up := agent.URL + created[i:strings.Index(created[i:], `"`)+i]

	const uuid = "0b0e4d2a-5c1f-4b6e-9a7d-3e2f1c0d9b8a"
	block := func(i int) string { return base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "%s%012d", uuid, i)) }
	// Block 0 is over a piece (8 MiB): two part objects.
	sizes := []int{9 << 20, 5 << 20, 1000}
	var all []byte
	data := make([][]byte, len(sizes))
	for i, n := range sizes {
		data[i] = make([]byte, n)
		_, _ = rand.Read(data[i])
		all = append(all, data[i]...)
	}
	put := func(u string, body []byte) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPut, u, bytes.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("PUT %s = %d", u, resp.StatusCode)
		}
	}
	for _, i := range []int{2, 0, 1} {
		put(up+"?comp=block&blockid="+block(i), data[i])
	}
	put(up+"?comp=blocklist", fmt.Appendf(nil, "<BlockList><Latest>%s</Latest><Latest>%s</Latest><Latest>%s</Latest></BlockList>", block(0), block(1), block(2)))
	twirp("FinalizeCacheEntryUpload", fmt.Sprintf(`{"key":"k","version":"v","size_bytes":"%d"}`, len(all)))
	found := twirp("GetCacheEntryDownloadURL", `{"key":"k","version":"v"}`)
	var dl struct {
		URL string `json:"signed_download_url"`
	}
	if err := jsonUnmarshal(found, &dl); err != nil || dl.URL == "" {
		t.Fatalf("lookup: %s", found)
	}
	// The entry is in parts: the download URL is the agent's own.
	j := strings.Index(dl.URL, DownloadPrefix)
	if j < 0 {
		t.Fatalf("the download URL is not the agent's: %s", dl.URL)
	}
	resp, err := http.Get(agent.URL + dl.URL[j:])
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got bytes.Buffer
	_, _ = got.ReadFrom(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.ContentLength != int64(len(all)) || !bytes.Equal(got.Bytes(), all) {
		t.Fatalf("the archive is not the blocks in the list's order (%s, %d bytes of %d)", resp.Status, got.Len(), len(all))
	}

	t.Run("a part changed after the save fails the restore", func(t *testing.T) {
		// The blocks arrived 2, 0, 1: block 2 is part object 1, block 0
		// parts 2 and 3, block 1 — the archive's second block — part 4.
		// Same size, other bytes.
		parts, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: aws.String("c/parts/")})
		if err != nil || len(parts.Contents) != 4 {
			t.Fatalf("parts: %v %v", parts, err)
		}
		key := aws.ToString(parts.Contents[3].Key)
		if !strings.HasSuffix(key, "/00004") {
			t.Fatalf("part keys: %s", key)
		}
		if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(make([]byte, len(data[1])))}); err != nil {
			t.Fatal(err)
		}
		resp, err := http.Get(agent.URL + dl.URL[j:])
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var got bytes.Buffer
		_, readErr := got.ReadFrom(resp.Body)
		// The first part came, then the stream stops short of the length
		// it announced: the client's length check makes that a miss.
		if readErr == nil || got.Len() >= len(all) || !bytes.Equal(got.Bytes(), all[:got.Len()]) {
			t.Fatalf("a changed part: %s, %d bytes of %d, read error %v", resp.Status, got.Len(), len(all), readErr)
		}
	})
	t.Run("a download URL that is not runfleet's is refused", func(t *testing.T) {
		resp, err := http.Get(agent.URL + DownloadPrefix + base64.RawURLEncoding.EncodeToString([]byte("http://169.254.169.254/latest")))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
	t.Run("an upload URL that is not runfleet's is refused", func(t *testing.T) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPut, agent.URL+UploadPrefix+base64.RawURLEncoding.EncodeToString([]byte("http://169.254.169.254/latest")), strings.NewReader("x"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
}
