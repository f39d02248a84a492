package main

import (
	"debug/buildinfo"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"strings"
)

// wantSettings are the Go build settings the Makefile's go-lambda-build
// recipe must leave in every bootstrap (go version -m shows them).
var wantSettings = []struct{ key, value string }{
	{"GOOS", "linux"},
	{"GOARCH", "arm64"},
	{"CGO_ENABLED", "0"},
	{"-trimpath", "true"},
}

// checkBootstrap returns every way in which the file at path is not a
// bootstrap Lambda's provided.al2023 arm64 runtime can run as built by the
// Makefile, or nil.
func checkBootstrap(path string, maxBytes int64) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	var problems []error
	if !info.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file", path)
	}
	if info.Size() > maxBytes {
		problems = append(problems, fmt.Errorf("%d bytes, over the %d-byte limit", info.Size(), maxBytes))
	}
	// Lambda runs bootstrap directly; zip keeps the mode bits.
	if info.Mode().Perm()&0o100 == 0 {
		problems = append(problems, errors.New("not executable"))
	}

	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s: not an ELF binary: %w", path, err)
	}
	defer f.Close()
	if f.Class != elf.ELFCLASS64 || f.Machine != elf.EM_AARCH64 {
		problems = append(problems, fmt.Errorf("built for %v %v, want ELFCLASS64 EM_AARCH64 (arm64)", f.Class, f.Machine))
	}
	if f.Type != elf.ET_EXEC {
		problems = append(problems, fmt.Errorf("ELF type %v, want ET_EXEC", f.Type))
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			problems = append(problems, errors.New("dynamically linked (has an interpreter); build with CGO_ENABLED=0"))
		}
	}
	if f.Section(".symtab") != nil {
		problems = append(problems, errors.New("not stripped (has .symtab); build with -ldflags '-s -w'"))
	}
	problems = append(problems, checkBuildSettings(path)...)
	if err := errors.Join(problems...); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// checkBuildSettings compares the Go build information embedded in the
// binary with the Makefile's recipe.
func checkBuildSettings(path string) []error {
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return []error{fmt.Errorf("no Go build information: %w", err)}
	}
	got := map[string]string{}
	for _, s := range bi.Settings {
		got[s.Key] = s.Value
	}
	var problems []error
	for _, want := range wantSettings {
		if got[want.key] != want.value {
			problems = append(problems, fmt.Errorf("build setting %s=%q, want %q", want.key, got[want.key], want.value))
		}
	}
	// Without lambda.norpc aws-lambda-go also starts the net/rpc server only
	// the retired go1.x runtime spoke.
	if !hasTag(got["-tags"], "lambda.norpc") {
		problems = append(problems, fmt.Errorf("build tags %q lack lambda.norpc", got["-tags"]))
	}
	return problems
}

func hasTag(tags, want string) bool {
	for _, tag := range strings.Split(tags, ",") {
		if tag == want {
			return true
		}
	}
	return false
}
