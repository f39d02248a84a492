package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// defaultChromium is where Debian's chromium package puts the browser;
// `make test` installs it (the Makefile's chromium target).
const defaultChromium = "/usr/bin/chromium"

// chromiumTimeout bounds one browser run on a loaded machine; it is a
// guard against a hung browser, not an assertion about speed.
const chromiumTimeout = 3 * time.Minute

// chromium is a headless browser the tests drive through its command
// line: no driver protocol, no dependency beyond the package.
type chromium struct {
	path    string
	profile string
}

// findChromium returns the browser, failing the test — never skipping it —
// when it is missing.
func findChromium(t *testing.T) *chromium {
	t.Helper()
	path := os.Getenv("RUNFLEET_CHROMIUM")
	if path == "" {
		path = defaultChromium
	}
	if _, err := exec.LookPath(path); err != nil {
		t.Fatalf("headless Chromium is needed for the status page test and %s is not runnable (%v): run `make chromium` "+
			"(apt-get install -y chromium, as root) or set RUNFLEET_CHROMIUM to a Chromium binary", path, err)
	}
	return &chromium{path: path, profile: t.TempDir()}
}

// run runs the browser headless on url with extra flags and returns its
// standard output. Everything that could reach the network on its own
// (updates, sync, QUIC probes) is off: the page must render offline.
func (c *chromium) run(t *testing.T, url string, extra ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), chromiumTimeout)
	defer cancel()
	args := append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--hide-scrollbars",
		"--user-data-dir=" + c.profile,
		// Long enough for the page to load, shorter than its 5 s refresh.
		"--virtual-time-budget=2000",
	}, extra...)
	args = append(args, url)
	cmd := exec.CommandContext(ctx, c.path, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within %s: %w", chromiumTimeout, err)
		}
		t.Fatalf("chromium %v: %v\nstderr:\n%s", extra, err, stderr.String())
	}
	return stdout.Bytes()
}

// dumpDOM returns the document as the browser built it.
func (c *chromium) dumpDOM(t *testing.T, url string) string {
	t.Helper()
	return string(c.run(t, url, "--dump-dom"))
}

// screenshot saves the rendered page as a PNG at path.
func (c *chromium) screenshot(t *testing.T, url, path string) {
	t.Helper()
	c.run(t, url, "--screenshot="+path, "--window-size=1280,1600")
	if info, err := os.Stat(path); err != nil || info.Size() == 0 {
		t.Fatalf("chromium wrote no screenshot at %s: %v", path, err)
	}
}

// testOutputDir is where tests leave files for a person to look at:
// $TEST_OUTPUT_DIR, else this package's testdata/out (ignored by git).
// t.TempDir would delete them.
func testOutputDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("TEST_OUTPUT_DIR")
	if dir == "" {
		dir = filepath.Join("testdata", "out")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
