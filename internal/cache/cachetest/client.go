// Package cachetest is what the tests of runfleet's cache share around
// GitHub's own client, npm @actions/cache: installing it, and the archive
// a job saves and restores (workspace/data/blob) with its hash.
package cachetest

import (
	"crypto/rand"
	"crypto/sha256"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// InstallClient installs npm @actions/cache (pinned in
// infra/test/install-cache-client.sh) and returns its npm prefix. A machine
// that cannot install it fails the test: the acceptance tests are never
// skipped.
func InstallClient(t testing.TB) string {
	t.Helper()
	_, self, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(self), "..", "..", "..", "infra", "test", "install-cache-client.sh")
	out, err := exec.Command("bash", script).CombinedOutput()
	if err != nil {
		t.Fatalf("installing npm @actions/cache failed (node and npm are needed): %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	last := lines[len(lines)-1]
	if i := strings.LastIndex(last, " in "); i >= 0 && strings.HasPrefix(last, "install-cache-client:") {
		return last[i+len(" in "):]
	}
	return last
}

// WriteData fills workspace/data/blob with n random bytes — random, since
// the client compresses the archive (zstd) and the sizes must stay what
// they say — written a MiB at a time, and returns their hash.
func WriteData(t testing.TB, workspace string, n int) [32]byte {
	t.Helper()
	dir := filepath.Join(workspace, "data")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "blob"))
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	buf := make([]byte, 1<<20)
	for left := n; left > 0; left -= len(buf) {
		b := buf[:min(left, len(buf))]
		_, _ = rand.Read(b)
		h.Write(b)
		if _, err := f.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return sum
}

// ReadData is the hash of workspace/data/blob; false when there is none.
func ReadData(t testing.TB, workspace string) ([32]byte, bool) {
	t.Helper()
	f, err := os.Open(filepath.Join(workspace, "data", "blob"))
	if err != nil {
		return [32]byte{}, false
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return sum, true
}

// ClearData removes workspace/data.
func ClearData(t testing.TB, workspace string) {
	t.Helper()
	if err := os.RemoveAll(filepath.Join(workspace, "data")); err != nil {
		t.Fatal(err)
	}
}
