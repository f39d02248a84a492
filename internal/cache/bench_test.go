package cache

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/cache/cachetest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

func randomFile(b *testing.B, p string, n int64) string {
	b.Helper()
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.CopyN(f, rand.Reader, n); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return p
}

func copyFile(b *testing.B, from, to string) {
	b.Helper()
	src, err := os.Open(from)
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		b.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		b.Fatal(err)
	}
}

// writeDownload writes a download to a new file dst through a 1 MiB
// buffer, every way's the same: io.Copy's 32 KiB would cost the client
// four times the system calls on a gigabyte.
func writeDownload(b *testing.B, dst string, body io.Reader) {
	b.Helper()
	f, err := os.Create(dst)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.CopyBuffer(onlyWriter{f}, body, make([]byte, 1<<20)); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}

// paths is a way's half that writes the files ps.
func paths(ps ...string) func() []string { return func() []string { return ps } }

func fileHash(b *testing.B, p string) [32]byte {
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

// benchStorage is where BenchmarkTransfer keeps the archive: a store for
// runfleet's path, and the same storage's own copy in and out (raw).
type benchStorage struct {
	name       string
	store      func(b *testing.B) Store
	rawSave    func(b *testing.B, archive string, size int64)
	rawRestore func(b *testing.B, dst string)
	// plain, for the disk, is the same storage over HTTP without runfleet.
	plain func(b *testing.B, dir string) *plainHTTP
}

func diskStorage(dir string) benchStorage {
	saved := filepath.Join(dir, "raw-saved")
	return benchStorage{
		name: "disk",
		store: func(b *testing.B) Store {
			st, err := OpenDisk(filepath.Join(dir, "store"), EvictionPolicy{}, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			return st
		},
		rawSave:    func(b *testing.B, archive string, _ int64) { copyFile(b, archive, saved) },
		rawRestore: func(b *testing.B, dst string) { copyFile(b, saved, dst) },
		plain:      newPlainHTTP,
	}
}

// s3Storage is a bucket on the moto server: raw is one PutObject of the
// file and one GetObject into a file.
func s3Storage(b *testing.B) benchStorage {
	client, bucket := testBucket(b)
	ctx := context.Background()
	return benchStorage{
		name: "s3",
		store: func(b *testing.B) Store {
			st, err := OpenS3(ctx, client, bucket, "runfleet/", EvictionPolicy{}, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			return st
		},
		rawSave: func(b *testing.B, archive string, size int64) {
			f, err := os.Open(archive)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("raw"), Body: f, ContentLength: aws.Int64(size)}, streamed); err != nil {
				b.Fatal(err)
			}
		},
		rawRestore: func(b *testing.B, dst string) {
			out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: aws.String("raw")})
			if err != nil {
				b.Fatal(err)
			}
			defer out.Body.Close()
			writeDownload(b, dst, out.Body)
		},
	}
}

// BenchmarkTransfer saves and restores one archive through runfleet's
// cache (real TCP on loopback, the SDK's requests, the disk store, or the
// S3 store on moto, whose restores come from the bucket) and, in the same
// run on the same storage, copies the same bytes without runfleet; it
// reports both throughputs and their ratio (docs/benchmarks.md).
func BenchmarkTransfer(b *testing.B) {
	for _, kind := range []string{"disk", "s3"} {
		for _, sz := range cachetest.BenchSizes {
			b.Run(kind+"/"+sz.Name, func(b *testing.B) {
				dir := b.TempDir()
				storage := diskStorage(dir)
				if kind == "s3" {
					storage = s3Storage(b)
				}
				benchTransfer(b, storage, dir, sz.N)
			})
		}
	}
}

func benchTransfer(b *testing.B, storage benchStorage, dir string, size int64) {
	archive := randomFile(b, filepath.Join(dir, "archive"), size)
	if size > cachetest.SDKSingleShot {
		cachetest.SplitBlocks(b, archive, size)
	}
	want := fileHash(b, archive)
	srv := httptest.NewUnstartedServer(nil)
	srv.Start()
	defer srv.Close()
	h, tokens, _ := testService(b, srv.URL, Options{Store: storage.store(b)})
	srv.Config.Handler = h
	tok, _ := tokens.Mint("bench", mainGrant, time.Hour)
	w := &handlerWorld{h: h}
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: cachetest.SDKConcurrency}}
	var raw, rf, plain [2]time.Duration // save, restore
	var overHTTP *plainHTTP
	if storage.plain != nil {
		overHTTP = storage.plain(b, dir)
	}
	// Each way of moving the bytes is a save and a restore. Each half
	// starts as a client's does, writing a new file (the one it wrote last
	// time is removed first: truncating a gigabyte's pages is not the
	// transfer's cost), and with no dirty pages (sync), so one way's
	// write-back never lands in another's timer; none of that is timed.
	// The ways take turns going first.
	type way struct {
		spent   *[2]time.Duration
		save    func(i int)
		restore func(i int)
		// writes are the files each half writes (save, restore).
		writes [2]func() []string
	}
	ways := []way{{
		spent:   &raw,
		writes:  [2]func() []string{paths(filepath.Join(dir, "raw-saved")), paths(filepath.Join(dir, "raw-restored"))},
		save:    func(int) { storage.rawSave(b, archive, size) },
		restore: func(int) { storage.rawRestore(b, filepath.Join(dir, "raw-restored")) },
	}, {
		spent: &rf,
		// The entries saved before this one: the others' files are
		// removed, and a pile of gigabytes in the page cache would make
		// the later ways pay for reclaiming memory.
		writes: [2]func() []string{func() []string {
			old, _ := filepath.Glob(filepath.Join(dir, "store", "*"))
			return old
		}, paths(filepath.Join(dir, "restored"))},
		save: func(i int) {
			key := fmt.Sprintf("k-%d", i)
			_, out := w.callB(b, tok, "CreateCacheEntry", `{"key":"`+key+`","version":"v"}`)
			cachetest.SDKUpload(b, c, out["signed_upload_url"].(string), archive, size)
			w.callB(b, tok, "FinalizeCacheEntryUpload", fmt.Sprintf(`{"key":%q,"version":"v","size_bytes":"%d"}`, key, size))
		},
		restore: func(i int) {
			_, out := w.callB(b, tok, "GetCacheEntryDownloadURL", `{"key":"`+fmt.Sprintf("k-%d", i)+`","version":"v"}`)
			resp, err := c.Get(out["signed_download_url"].(string))
			if err != nil {
				b.Fatal(err)
			}
			defer resp.Body.Close()
			writeDownload(b, filepath.Join(dir, "restored"), resp.Body)
		},
	}}
	if overHTTP != nil {
		ways = append(ways, way{
			spent:   &plain,
			writes:  [2]func() []string{paths(filepath.Join(dir, plainStored)), paths(filepath.Join(dir, "plain-restored"))},
			save:    func(int) { overHTTP.save(b, archive, size) },
			restore: func(int) { overHTTP.restore(b, filepath.Join(dir, "plain-restored")) },
		})
	}
	timed := func(f func(int), i int, writes func() []string) time.Duration {
		b.StopTimer()
		for _, p := range writes() {
			_ = os.RemoveAll(p)
		}
		syscall.Sync()
		b.StartTimer()
		t0 := time.Now()
		f(i)
		return time.Since(t0)
	}
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// Every way saves, then every way restores, as a cache is read
		// in a later job than the one that wrote it.
		for half := range 2 {
			for k := range ways {
				wy := ways[(i+k)%len(ways)]
				f := wy.save
				if half == 1 {
					f = wy.restore
				}
				wy.spent[half] += timed(f, i, wy.writes[half])
			}
		}
	}
	b.StopTimer()
	if fileHash(b, filepath.Join(dir, "restored")) != want {
		b.Fatal("restored bytes differ")
	}
	mbps := func(d time.Duration) float64 { return float64(size) * float64(b.N) / d.Seconds() / (1 << 20) }
	b.ReportMetric(mbps(raw[0]), "raw-save-MB/s")
	b.ReportMetric(mbps(raw[1]), "raw-restore-MB/s")
	b.ReportMetric(mbps(rf[0]), "runfleet-save-MB/s")
	b.ReportMetric(mbps(rf[1]), "runfleet-restore-MB/s")
	b.ReportMetric(100*raw[0].Seconds()/rf[0].Seconds(), "save-%-of-raw")
	b.ReportMetric(100*raw[1].Seconds()/rf[1].Seconds(), "restore-%-of-raw")
	if overHTTP != nil {
		b.ReportMetric(mbps(plain[0]), "plain-http-save-MB/s")
		b.ReportMetric(mbps(plain[1]), "plain-http-restore-MB/s")
		b.ReportMetric(100*plain[0].Seconds()/rf[0].Seconds(), "save-%-of-plain-http")
		b.ReportMetric(100*plain[1].Seconds()/rf[1].Seconds(), "restore-%-of-plain-http")
	}
}

// BenchmarkRealClient saves and restores 100 MB and 1 GB with GitHub's own
// client (tar, zstd and all) and checks the restored bytes' hash.
func BenchmarkRealClient(b *testing.B) {
	w := newCacheWorld(b, nil)
	tok := w.token(Job{RepoID: 1, Repo: "o/a", Ref: "refs/heads/main", DefaultBranch: "main"})
	// The testing package runs a benchmark more than once (b.N = 1, then
	// more): every save needs a key of its own, or first writer wins.
	saves := 0
	for _, sz := range cachetest.BenchSizes {
		b.Run(sz.Name, func(b *testing.B) {
			w.t = b
			ws := b.TempDir()
			b.SetBytes(sz.N)
			for i := 0; i < b.N; i++ {
				// Making and hashing the data is not the cache's time.
				b.StopTimer()
				if err := os.MkdirAll(filepath.Join(ws, "data"), 0o755); err != nil {
					b.Fatal(err)
				}
				randomFile(b, filepath.Join(ws, "data", "blob"), sz.N)
				want, _ := cachetest.ReadData(b, ws)
				b.StartTimer()
				saves++
				key := fmt.Sprintf("big-%s-%d", sz.Name, saves)
				if r := w.run(w.url, tok, ws, "save", "data", key); !saved(r) {
					b.Fatalf("save: %s", r.Stdout)
				}
				cachetest.ClearData(b, ws)
				if r := w.run(w.url, tok, ws, "restore", "data", key); matched(r) != key {
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
