package main

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// -layout tests an image `make image` wrote (it passes its layout) instead
// of building one.
var layoutFlag = flag.String("layout", "", "an OCI layout to test instead of building one (make image)")

const testVersion = "v0.0.0-imagetest"

// The image runs: read back from the OCI layout, digest by digest, its
// layer unpacked, the entrypoint answers `version` and the default command
// (`serve`) answers --help; it runs as a non-root user that owns the state
// directory, and carries the CA bundle.
func TestImageRunsItsEntrypoint(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the image's binaries are linux binaries")
	}
	layout, wantVersion := *layoutFlag, ""
	if layout == "" {
		layout, wantVersion = buildTestImage(t), testVersion
	}
	img := openLayout(t, layout, "linux", runtime.GOARCH)
	if wantVersion != "" && img.refName != wantVersion {
		t.Errorf("index.json names the image %q, want %q", img.refName, wantVersion)
	}
	cfg := img.config.Config
	if u := strings.Split(cfg.User, ":")[0]; u == "" || u == "0" || u == "root" {
		t.Errorf("image runs as %q, want a non-root user", cfg.User)
	}
	if hdr := img.headers[strings.TrimPrefix(stateDir, "/")]; hdr == nil || hdr.Uid != imageUID {
		t.Errorf("%s is not owned by the image's user %d: %+v", stateDir, imageUID, hdr)
	}
	if st, err := os.Stat(filepath.Join(img.rootfs, caBundlePath)); err != nil || st.Size() == 0 {
		t.Errorf("CA bundle %s missing or empty: %v", caBundlePath, err)
	}
	if len(cfg.Entrypoint) == 0 || len(cfg.Cmd) == 0 || cfg.Cmd[0] != "serve" {
		t.Fatalf("entrypoint %q, cmd %q: want runfleet, serve", cfg.Entrypoint, cfg.Cmd)
	}

	entrypoint := filepath.Join(img.rootfs, cfg.Entrypoint[0])
	out := runIn(t, img, append(cfg.Entrypoint[1:], "version"), entrypoint)
	if !strings.HasPrefix(out, "runfleet ") || (wantVersion != "" && !strings.Contains(out, wantVersion)) || strings.Contains(out, "runfleet dev ") {
		t.Errorf("version printed %q, want the stamped version", out)
	}
	out = runIn(t, img, append(append(cfg.Entrypoint[1:], cfg.Cmd...), "--help"), entrypoint)
	if !strings.Contains(out, "--listen") || !strings.Contains(out, "--config") {
		t.Errorf("serve --help printed %q", out)
	}
}

// runIn runs the unpacked entrypoint with the image's environment and
// working directory mapped into the unpacked root.
func runIn(t *testing.T, img openedImage, args []string, entrypoint string) string {
	t.Helper()
	cmd := exec.Command(entrypoint, args...)
	cmd.Dir = filepath.Join(img.rootfs, img.config.Config.WorkingDir)
	cmd.Env = img.config.Config.Env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", entrypoint, strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// buildTestImage builds a static runfleet for this machine, stamped as
// the Makefile stamps it, and writes an image of it as `make image` does.
func buildTestImage(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "runfleet")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X main.version="+testVersion+" -X main.commit=0123456789ab -X main.date=2025-01-02T03:04:05Z", "-o", bin, "../../cmd/runfleet")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	layout := filepath.Join(dir, "layout")
	o := options{
		version: testVersion, revision: "0123456789ab", created: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
		caBundle: []byte("-----BEGIN CERTIFICATE-----\nnot a real one\n-----END CERTIFICATE-----\n"),
		targets:  []target{{platform: platform{OS: "linux", Architecture: runtime.GOARCH}, binary: bin}},
		out:      layout,
	}
	if err := writeLayout(o); err != nil {
		t.Fatal(err)
	}
	// The archive holds the same layout.
	if err := writeArchive(layout, filepath.Join(dir, "image.tar"), o.created); err != nil {
		t.Fatal(err)
	}
	return layout
}
