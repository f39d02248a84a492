package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The Makefile's recipe, applied to this small package, passes the check.
func TestAcceptsBinaryBuiltLikeTheMakefile(t *testing.T) {
	out := filepath.Join(t.TempDir(), "bootstrap")
	build := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags", "-s -w", "-o", out, ".")
	build.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
	if msg, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, msg)
	}
	if err := checkBootstrap(out, 20<<20); err != nil {
		t.Fatalf("a binary built like the Makefile's was rejected: %v", err)
	}
	if err := checkBootstrap(out, 1024); err == nil || !strings.Contains(err.Error(), "over the 1024-byte limit") {
		t.Fatalf("a binary over the size limit was accepted: %v", err)
	}
}

// The running test binary is built without the recipe's tag and -trimpath,
// whatever the host, so both must be reported.
func TestRejectsBinaryBuiltOtherwise(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	err = checkBootstrap(self, 1<<40)
	if err == nil {
		t.Fatal("the test binary passed the check")
	}
	for _, want := range []string{"lambda.norpc", "-trimpath"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
}

func TestRejectsNonELF(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bootstrap")
	if err := os.WriteFile(path, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := checkBootstrap(path, 20<<20); err == nil || !strings.Contains(err.Error(), "not an ELF binary") {
		t.Fatalf("a shell script passed as a bootstrap: %v", err)
	}
}
