package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/runfleet/runfleet/internal/cache"
	"github.com/runfleet/runfleet/internal/metrics"
	"github.com/runfleet/runfleet/internal/serve"
	"github.com/runfleet/runfleet/internal/testenv"
)

// twirp posts one cache service call and decodes the answer.
func twirp(t *testing.T, base, token, method, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+cache.TwirpPrefix+method, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// cacheToken mints a cache token with the key serve generated in dir.
func cacheToken(t *testing.T, dir string) string {
	t.Helper()
	key, err := os.ReadFile(filepath.Join(dir, serve.TokenKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := cache.NewTokens(bytes.TrimSpace(key), "ctl", nil)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokens.Mint("runfleet-p-1-1", cache.Grant{RepoID: 1, Write: "refs/heads/main", Read: []string{"refs/heads/main"}}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// saveAndRestore saves "archive" under key k as the client does (one Put
// Blob to serve's upload URL) and downloads it from the URL the lookup
// gives, which it returns.
func saveAndRestore(t *testing.T, base, tok string) string {
	t.Helper()
	status, out := twirp(t, base, tok, "CreateCacheEntry", `{"key":"k","version":"v"}`)
	up, _ := out["signed_upload_url"].(string)
	if status != 200 || !strings.HasPrefix(up, base+cache.BlobPrefix) {
		t.Fatalf("create = %d %v", status, out)
	}
	req, _ := http.NewRequest(http.MethodPut, up, strings.NewReader("archive"))
	req.Header.Set("x-ms-blob-type", "BlockBlob")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("upload = %v %v", resp, err)
	}
	resp.Body.Close()
	if status, out := twirp(t, base, tok, "FinalizeCacheEntryUpload", `{"key":"k","version":"v","size_bytes":"7"}`); status != 200 {
		t.Fatalf("finalize = %d %v", status, out)
	}
	status, out = twirp(t, base, tok, "GetCacheEntryDownloadURL", `{"key":"k","version":"v"}`)
	down, _ := out["signed_download_url"].(string)
	if status != 200 || out["matched_key"] != "k" {
		t.Fatalf("lookup = %d %v", status, out)
	}
	resp, err = http.Get(down)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(got) != "archive" {
		t.Fatalf("download = %d %q", resp.StatusCode, got)
	}
	return down
}

// With cache.dir set, `runfleet serve` answers the cache protocol on its
// listener, with tokens signed by its instance token key, and blob URLs
// under server.public_url.
func TestServeServesTheCache(t *testing.T) {
	dir := t.TempDir()
	cacheDir := filepath.Join(t.TempDir(), "cache")
	s := startServe(t, func(base string) string {
		return baseConfig(dir, "{simulated: true}") + "server: {public_url: " + base + "}\ncache: {dir: " + cacheDir + "}\n"
	})
	tok := cacheToken(t, dir)
	saveAndRestore(t, s.base, tok)
	families := scrape(t, s.base+"/metrics", "")
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{metrics.CacheLookups, map[string]string{"result": "hit"}, 1},
		{metrics.CacheLookups, map[string]string{"result": "miss"}, 0},
		{metrics.CacheTransferBytes, map[string]string{"op": "upload"}, 7},
		{metrics.CacheTransferBytes, map[string]string{"op": "download"}, 7},
		{metrics.CacheStoredBytes, map[string]string{}, 7},
		{metrics.CacheEntries, map[string]string{}, 1},
	} {
		if v, ok := sample(families, c.name, c.labels); !ok || v != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, v, ok, c.want)
		}
	}
	// A garbled token is refused.
	if status, _ := twirp(t, s.base, "x."+tok[2:], "GetCacheEntryDownloadURL", `{"key":"k","version":"v"}`); status != http.StatusUnauthorized {
		t.Fatalf("a garbled token = %d, want 401", status)
	}
}

// With cache.s3 the archive goes into the bucket through serve and comes
// back straight from it, on a presigned URL of the bucket's endpoint.
func TestServeServesTheCacheFromS3(t *testing.T) {
	// serve builds its S3 client from the SDK's default chain: the test's
	// region and the moto server's static credentials (only moto is
	// needed, so not testenv.SetEnv, which starts DynamoDB Local too).
	endpoint := testenv.MotoEndpoint(t)
	for k, v := range map[string]string{"AWS_REGION": testenv.Region, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
		"AWS_SESSION_TOKEN": "", "AWS_PROFILE": "", "AWS_EC2_METADATA_DISABLED": "true"} {
		t.Setenv(k, v)
	}
	client := s3.NewFromConfig(testenv.AWSConfig(t), func(o *s3.Options) { o.UsePathStyle = true })
	bucket := strings.ToLower(strings.ReplaceAll(testenv.UniqueName(t, "serve-cache"), "_", "-"))
	if _, err := client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s := startServe(t, func(base string) string {
		return baseConfig(dir, "{simulated: true}") + "server: {public_url: " + base + "}\n" +
			"cache: {s3: {bucket: " + bucket + ", prefix: c/, endpoint: '" + endpoint + "', path_style: true}}\n"
	})
	if down := saveAndRestore(t, s.base, cacheToken(t, dir)); !strings.HasPrefix(down, endpoint) {
		t.Fatalf("download URL %q is not the bucket's", down)
	}
}

func TestServeWithoutCacheDirServesNoCache(t *testing.T) {
	s := startServe(t, func(base string) string {
		return baseConfig(t.TempDir(), "{simulated: true}") + "server: {public_url: " + base + "}\n"
	})
	if status, _ := twirp(t, s.base, "x", "GetCacheEntryDownloadURL", `{}`); status != http.StatusNotFound {
		t.Fatalf("cache route with the cache off = %d, want 404", status)
	}
}
