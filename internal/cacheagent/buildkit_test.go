package cacheagent

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	actionscache "github.com/tonistiigi/go-actions-cache"

	"github.com/runfleet/runfleet/internal/cache"
)

// Docker's `cache-to/cache-from: type=gha` is BuildKit's client
// (github.com/tonistiigi/go-actions-cache), which speaks the same v2
// protocol with Azure's Go storage SDK: blocks staged then committed, and
// downloads read at offsets with Azure's x-ms-range. Through the agent it
// saves a layer and reads it back whole and from offsets, byte for byte.
func TestBuildKitsGHACacheThroughTheAgent(t *testing.T) {
	buildKitRoundTrip(t, newAgentWorld(t, nil, "", false))
}

// On the S3 path the agent sends the blocks to the bucket as parts and
// restores them itself: a read at an offset fetches from there only.
func TestBuildKitsGHACacheOnS3ThroughTheAgent(t *testing.T) {
	st, _, _ := motoStore(t)
	w := newAgentWorld(t, st, "", false)
	buildKitRoundTrip(t, w)
	if w.agent.Counts().DirectParts == 0 {
		t.Fatal("the layer did not go to the bucket as parts")
	}
}

// buildKitClientEnv names the layer file when the test binary runs as
// BuildKit's client.
const buildKitClientEnv = "RUNFLEET_BUILDKIT_CLIENT_LAYER"

// buildKitRoundTrip runs BuildKit's client as a process of the machine:
// the runner's ACTIONS_* variables (GitHub's results URL, which the agent
// answers, and GitHub's token, which it replaces) and the machine's CA in
// the system trust store (SSL_CERT_FILE stands in for it).
func buildKitRoundTrip(t *testing.T, w *agentWorld) {
	t.Helper()
	w.box.set(w.job(cache.Job{RepoID: cache.RepoIDFor("octo/app"), Repo: "octo/app", Ref: "refs/heads/main", DefaultBranch: "main"}))
	layer := make([]byte, 5<<20+123) // over the storage SDK's 4 MiB block
	if _, err := cryptoRandRead(layer); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "layer")
	if err := os.WriteFile(path, layer, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(),
		buildKitClientEnv+"="+path,
		"SSL_CERT_FILE="+w.caFile,
		"ACTIONS_CACHE_SERVICE_V2=true",
		"ACTIONS_RESULTS_URL="+w.agentURL,
		"ACTIONS_RUNTIME_TOKEN="+githubRuntimeToken(time.Now()),
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("BuildKit's client: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "buildkit client: ok") {
		t.Fatalf("BuildKit's client did not finish:\n%s", out)
	}
}

// githubRuntimeToken is GitHub's runtime token as BuildKit's cache client
// reads it before its first call: a JWT whose "ac" claim lists the cache
// scopes. The client only parses it; the agent replaces it with
// runfleet's, so its signature is never checked by anyone.
func githubRuntimeToken(now time.Time) string {
	seg := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return seg(map[string]string{"alg": "HS256", "typ": "JWT"}) + "." + seg(map[string]any{
		"ac":  `[{"Scope":"refs/heads/main","Permission":3}]`,
		"nbf": now.Add(-time.Minute).Unix(),
		"exp": now.Add(time.Hour).Unix(),
	}) + ".c2lnbmF0dXJl"
}

// runBuildKitClient is the test binary as BuildKit's client: it reads its
// environment as BuildKit does (TryEnv), saves the layer, loads it, and
// reads it whole and at offsets — each read at another offset a download
// with x-ms-range — comparing every byte. It prints "buildkit client: ok"
// and returns 0, or says what differed and returns 1.
func runBuildKitClient() int {
	if err := buildKitClient(os.Getenv(buildKitClientEnv)); err != nil {
		fmt.Println("buildkit client:", err)
		return 1
	}
	fmt.Println("buildkit client: ok")
	return 0
}

func buildKitClient(path string) error {
	layer, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	actionscache.Log = func(f string, a ...any) { fmt.Printf("buildkit: "+f+"\n", a...) }
	c, err := actionscache.TryEnv(actionscache.Opt{Timeout: time.Minute})
	if err != nil || c == nil {
		return fmt.Errorf("TryEnv = %v, %v", c, err)
	}
	ctx := context.Background()
	const key = "buildkit-blob-1-sha256:0123456789abcdef"
	if err := c.Save(ctx, key, actionscache.NewBlob(layer)); err != nil {
		return fmt.Errorf("save: %w", err)
	}
	e, err := c.Load(ctx, key)
	if err != nil || e == nil {
		return fmt.Errorf("load = %v, %v; want the saved layer", e, err)
	}
	ra := e.Download(ctx)
	whole, err := io.ReadAll(io.NewSectionReader(ra, 0, int64(len(layer))))
	ra.Close()
	if err != nil || !bytes.Equal(whole, layer) {
		return fmt.Errorf("the layer read whole: %d bytes, %v; want the %d saved", len(whole), err, len(layer))
	}
	// A read at an offset is a new download with x-ms-range: it must get
	// the bytes from there, not the layer from its start.
	for _, off := range []int64{1, 4<<20 + 7, int64(len(layer)) - 10} {
		tail := make([]byte, int64(len(layer))-off)
		ra := e.Download(ctx)
		n, err := ra.ReadAt(tail, off)
		ra.Close()
		if (err != nil && err != io.EOF) || n != len(tail) || !bytes.Equal(tail, layer[off:]) {
			return fmt.Errorf("read at %s: %d bytes, %v; want the layer's last %d bytes", strconv.FormatInt(off, 10), n, err, len(tail))
		}
	}
	if miss, err := c.Load(ctx, "buildkit-blob-1-sha256:none"); err != nil || miss != nil {
		return fmt.Errorf("a key never saved = %v, %v; want a miss", miss, err)
	}
	return nil
}
