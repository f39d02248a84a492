package cacheagent

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/cache/cachetest"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/runfleet/runfleet/internal/cache"
)

func benchFile(b *testing.B, p string, n int64) [32]byte {
	b.Helper()
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	h := sha256.New()
	buf := make([]byte, 1<<20)
	for left := n; left > 0; left -= int64(len(buf)) {
		chunk := buf[:min(left, int64(len(buf)))]
		_, _ = io.ReadFull(randReader{}, chunk)
		h.Write(chunk)
		if _, err := f.Write(chunk); err != nil {
			b.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	var s [32]byte
	copy(s[:], h.Sum(nil))
	return s
}

// BenchmarkAgentS3 is the AWS path side by side with the raw storage: one
// archive saved and restored the way the client's SDK does it, over HTTPS
// to the agent, which sends the blocks straight to the bucket (moto) as
// part objects on presigned URLs (one object up to 128 MiB), the restore
// coming from the bucket on a presigned GET (one object) or through the
// agent, which fetches the parts in parallel; and, in the same iteration,
// the same bytes put into and got out of the same bucket by the AWS SDK
// (raw: PutObject and GetObject, the headline; and a multipart upload of
// the SDK's parts, for comparison). It reports the throughputs and the
// ratios to PutObject and GetObject (docs/benchmarks.md).
func BenchmarkAgentS3(b *testing.B) {
	for _, sz := range cachetest.BenchSizes {
		b.Run(sz.Name, func(b *testing.B) {
			st, client, bucket := motoStore(b)
			w := newAgentWorld(b, st, "", false)
			w.box.set(w.job(cache.Job{RepoID: 1, Repo: "o/a", Ref: "refs/heads/main", DefaultBranch: "main"}))
			dir := b.TempDir()
			archive := filepath.Join(dir, "archive")
			want := benchFile(b, archive, sz.N)
			cachetest.SplitBlocks(b, archive, sz.N)
			pem, err := os.ReadFile(w.caFile)
			if err != nil {
				b.Fatal(err)
			}
			roots := x509.NewCertPool()
			roots.AppendCertsFromPEM(pem)
			c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, MaxIdleConnsPerHost: cachetest.SDKConcurrency}}
			call := func(method, body string) map[string]any {
				resp, err := c.Post(strings.TrimSuffix(w.agentURL, "/")+cache.TwirpPrefix+method, "application/json", strings.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				defer resp.Body.Close()
				var out map[string]any
				_ = json.NewDecoder(resp.Body).Decode(&out)
				if resp.StatusCode != 200 {
					b.Fatalf("%s = %d %v", method, resp.StatusCode, out)
				}
				return out
			}
			ctx := context.Background()
			var raw, rf [2]time.Duration
			var rawMultipart time.Duration
			b.SetBytes(sz.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				f, _ := os.Open(archive)
				if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("raw"), Body: f, ContentLength: aws.Int64(sz.N)},
					unsignedPayload); err != nil {
					b.Fatal(err)
				}
				f.Close()
				t1 := time.Now()
				out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: aws.String("raw")})
				if err != nil {
					b.Fatal(err)
				}
				dst, _ := os.Create(filepath.Join(dir, "raw-restored"))
				_, _ = io.Copy(dst, out.Body)
				out.Body.Close()
				dst.Close()
				t2 := time.Now()
				raw[0] += t1.Sub(t0)
				raw[1] += t2.Sub(t1)
				// Raw the agent's way: the same parts, 8 at a time, completed.
				t0 = time.Now()
				rawMultipartPut(b, client, bucket, archive, sz.N)
				rawMultipart += time.Since(t0)

				key := fmt.Sprintf("k-%d-%d", i, time.Now().UnixNano())
				t0 = time.Now()
				created := call("CreateCacheEntry", `{"key":"`+key+`","version":"v"}`)
				up, _ := created["signed_upload_url"].(string)
				if !strings.Contains(up, UploadPrefix) {
					b.Fatalf("not the agent's upload URL: %v", created)
				}
				cachetest.SDKUpload(b, c, up, archive, sz.N)
				call("FinalizeCacheEntryUpload", fmt.Sprintf(`{"key":%q,"version":"v","size_bytes":"%d"}`, key, sz.N))
				t1 = time.Now()
				found := call("GetCacheEntryDownloadURL", `{"key":"`+key+`","version":"v"}`)
				resp, err := c.Get(found["signed_download_url"].(string))
				if err != nil {
					b.Fatal(err)
				}
				dst, _ = os.Create(filepath.Join(dir, "restored"))
				_, _ = io.Copy(dst, resp.Body)
				resp.Body.Close()
				dst.Close()
				t2 = time.Now()
				rf[0] += t1.Sub(t0)
				rf[1] += t2.Sub(t1)
			}
			b.StopTimer()
			if h := benchHash(b, filepath.Join(dir, "restored")); h != want {
				b.Fatal("restored bytes differ")
			}
			mbps := func(d time.Duration) float64 { return float64(sz.N) * float64(b.N) / d.Seconds() / (1 << 20) }
			b.ReportMetric(mbps(raw[0]), "raw-save-MB/s")
			b.ReportMetric(mbps(raw[1]), "raw-restore-MB/s")
			b.ReportMetric(mbps(rawMultipart), "raw-multipart-save-MB/s")
			b.ReportMetric(mbps(rf[0]), "agent-save-MB/s")
			b.ReportMetric(mbps(rf[1]), "agent-restore-MB/s")
			b.ReportMetric(100*raw[0].Seconds()/rf[0].Seconds(), "save-%-of-raw")
			b.ReportMetric(100*raw[1].Seconds()/rf[1].Seconds(), "restore-%-of-raw")
		})
	}
}

// BenchmarkRealClientS3 saves and restores with GitHub's own client through
// the agent onto the bucket (moto), checking the restored bytes' hash.
func BenchmarkRealClientS3(b *testing.B) {
	st, _, _ := motoStore(b)
	w := newAgentWorld(b, st, "", false)
	w.box.set(w.job(cache.Job{RepoID: 1, Repo: "o/a", Ref: "refs/heads/main", DefaultBranch: "main"}))
	saves := 0
	for _, sz := range cachetest.BenchSizes {
		b.Run(sz.Name, func(b *testing.B) {
			w.t = b
			ws := b.TempDir()
			b.SetBytes(sz.N)
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				if err := os.MkdirAll(filepath.Join(ws, "data"), 0o755); err != nil {
					b.Fatal(err)
				}
				want := benchFile(b, filepath.Join(ws, "data", "blob"), sz.N)
				b.StartTimer()
				saves++
				key := fmt.Sprintf("big-%s-%d", sz.Name, saves)
				if r := w.run(ws, "save", "data", key); !saved(r) {
					b.Fatalf("save: %s", r.Stdout)
				}
				cachetest.ClearData(b, ws)
				if r := w.run(ws, "restore", "data", key); matched(r) != key {
					b.Fatalf("restore: %s", r.Stdout)
				}
				b.StopTimer()
				if got, ok := cachetest.ReadData(b, ws); !ok || got != want {
					b.Fatal("restored bytes differ")
				}
				b.StartTimer()
			}
		})
	}
}

// rawMultipartPut puts the archive into the bucket as the agent does,
// without it: a multipart upload of the SDK's 64 MiB parts, 8 at a time.
func rawMultipartPut(b *testing.B, client *s3.Client, bucket, path string, size int64) {
	b.Helper()
	ctx := context.Background()
	key := aws.String("raw-multipart")
	mp, err := client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &bucket, Key: key})
	if err != nil {
		b.Fatal(err)
	}
	parts := make([]types.CompletedPart, (size+cachetest.SDKBlockSize-1)/cachetest.SDKBlockSize)
	cachetest.EachBlock(size, func(i int, off, m int64) {
		f, err := os.Open(path)
		if err != nil {
			b.Error(err)
			return
		}
		defer f.Close()
		out, err := client.UploadPart(ctx, &s3.UploadPartInput{
			Bucket: &bucket, Key: key, UploadId: mp.UploadId, PartNumber: aws.Int32(int32(i + 1)),
			Body: io.NewSectionReader(f, off, m), ContentLength: aws.Int64(m),
		}, unsignedPayload)
		if err != nil {
			b.Error(err)
			return
		}
		parts[i] = types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(int32(i + 1))}
	})
	if _, err := client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: &bucket, Key: key, UploadId: mp.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	}); err != nil {
		b.Fatal(err)
	}
}

func unsignedPayload(o *s3.Options) {
	o.APIOptions = append(o.APIOptions, v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware)
	o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
}

func benchHash(b *testing.B, p string) [32]byte {
	b.Helper()
	f, err := os.Open(p)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		b.Fatal(err)
	}
	var s [32]byte
	copy(s[:], h.Sum(nil))
	return s
}

// randReader is crypto/rand's reader without its import clash.
type randReader struct{}

func (randReader) Read(p []byte) (int, error) { return cryptoRandRead(p) }
