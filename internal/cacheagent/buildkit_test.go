package cacheagent

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	actionscache "github.com/tonistiigi/go-actions-cache"

	"github.com/runfleet/runfleet/internal/cache"
)

// githubRuntimeToken is GitHub's runtime token as BuildKit's cache client
// reads it before its first call: a JWT whose "ac" claim lists the cache
// scopes. The client only parses it; the agent replaces it with
// runfleet's, so its signature is never checked by anyone.
func githubRuntimeToken(t *testing.T, now time.Time) string {
	t.Helper()
	seg := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return seg(map[string]string{"alg": "HS256", "typ": "JWT"}) + "." + seg(map[string]any{
		"ac":  `[{"Scope":"refs/heads/main","Permission":3}]`,
		"nbf": now.Add(-time.Minute).Unix(),
		"exp": now.Add(time.Hour).Unix(),
	}) + ".c2lnbmF0dXJl"
}

// Docker's `cache-to/cache-from: type=gha` is BuildKit's client
// (github.com/tonistiigi/go-actions-cache), which speaks the same v2
// protocol with Azure's Go storage SDK: blocks staged then committed, and
// downloads read at offsets with Azure's x-ms-range. Through the agent it
// saves a layer and reads it back whole and from an offset, byte for byte.
func TestBuildKitsGHACacheThroughTheAgent(t *testing.T) {
	w := newAgentWorld(t, nil, "", false)
	w.box.set(w.job(cache.Job{RepoID: cache.RepoIDFor("octo/app"), Repo: "octo/app", Ref: "refs/heads/main", DefaultBranch: "main"}))

	pem, err := os.ReadFile(w.caFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	httpClient := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	c, err := actionscache.New(githubRuntimeToken(t, time.Now()), w.agentURL, true, actionscache.Opt{Client: httpClient, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	layer := make([]byte, 5<<20+123) // over the storage SDK's 4 MiB block
	if _, err := cryptoRandRead(layer); err != nil {
		t.Fatal(err)
	}
	const key = "buildkit-blob-1-sha256:0123456789abcdef"
	if err := c.Save(ctx, key, actionscache.NewBlob(layer)); err != nil {
		t.Fatalf("BuildKit's save through the agent: %v", err)
	}
	e, err := c.Load(ctx, key)
	if err != nil || e == nil {
		t.Fatalf("BuildKit's load = %v, %v; want the saved layer", e, err)
	}
	ra := e.Download(ctx)
	defer ra.Close()
	whole, err := io.ReadAll(io.NewSectionReader(ra, 0, int64(len(layer))))
	if err != nil || !bytes.Equal(whole, layer) {
		t.Fatalf("the layer read whole: %d bytes, %v; want the %d saved", len(whole), err, len(layer))
	}
	// A read at an offset is a new download with x-ms-range: it must get
	// the bytes from there, not the layer from its start.
	for _, off := range []int64{1, 4<<20 + 7, int64(len(layer)) - 10} {
		tail := make([]byte, int64(len(layer))-off)
		ra2 := e.Download(ctx)
		n, err := ra2.ReadAt(tail, off)
		ra2.Close()
		if (err != nil && err != io.EOF) || n != len(tail) || !bytes.Equal(tail, layer[off:]) {
			t.Fatalf("read at %d: %d bytes, %v; want the layer's last %d bytes", off, n, err, len(tail))
		}
	}
	if miss, err := c.Load(ctx, "buildkit-blob-1-sha256:none"); err != nil || miss != nil {
		t.Fatalf("a key never saved = %v, %v; want a miss", miss, err)
	}
}
