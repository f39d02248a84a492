// Command repocheck checks what git tracks, for `make lint-repo`:
//
//   - no tracked file is larger than -max-bytes: a build output or a data
//     dump committed by mistake stays in the history of every clone;
//   - no tracked Go file is longer than -max-go-lines: a file that grew past
//     it holds more than one purpose, and is split by purpose;
//   - no production function in -func-dir (the engine's use cases) is
//     longer than -max-func-lines: a decision is a function apart from its
//     effects;
//   - every relative link in the given Markdown files resolves to a file (or
//     directory) git tracks, and a #fragment to a heading of its target: a
//     link to a file that only exists on one machine, or outside the
//     repository, is broken for every other reader.
//
// Absolute links (http, https, mailto, …) are not followed.
//
//	go run ./infra/repocheck [-max-bytes N] [-max-go-lines N] file.md...
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

func main() {
	maxBytes := flag.Int64("max-bytes", 1<<20, "largest acceptable tracked file, in bytes")
	maxGoLines := flag.Int("max-go-lines", 500, "longest acceptable tracked Go file, in lines")
	funcDir := flag.String("func-dir", "internal/engine", "directory whose production functions -max-func-lines bounds")
	maxFuncLines := flag.Int("max-func-lines", 80, "longest acceptable production function in -func-dir, in lines")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: repocheck [-max-bytes N] [-max-go-lines N] file.md...")
		flag.PrintDefaults()
	}
	flag.Parse()

	// Run from the repository's root (make does): tracked paths are
	// relative to it, and so are the Markdown files' links.
	out, err := exec.Command("git", "ls-files", "-z").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "repocheck: git ls-files:", err)
		os.Exit(2)
	}
	tracked := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")

	var problems []string
	for _, path := range tracked {
		// A tracked file deleted in the work tree has nothing to measure.
		if fi, err := os.Lstat(path); err == nil && fi.Size() > *maxBytes {
			problems = append(problems, fmt.Sprintf("%s: %d bytes, over the %d-byte limit (build outputs belong in bin/, which is ignored)", path, fi.Size(), *maxBytes))
		}
	}

	for _, path := range tracked {
		if !strings.HasSuffix(path, ".go") {
			continue
		}
		if text, err := os.ReadFile(path); err == nil {
			if n := strings.Count(string(text), "\n"); n > *maxGoLines {
				problems = append(problems, fmt.Sprintf("%s: %d lines, over the %d-line limit (split it by purpose)", path, n, *maxGoLines))
			}
		}
	}

	problems = append(problems, longFuncs(tracked, *funcDir, *maxFuncLines)...)

	repo := newTree(tracked, os.ReadFile)
	for _, md := range flag.Args() {
		text, err := os.ReadFile(md)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		for _, l := range Links(text) {
			if msg := repo.check(md, l.Target); msg != "" {
				problems = append(problems, fmt.Sprintf("%s:%d: %s: %s", md, l.Line, l.Target, msg))
			}
		}
	}

	if len(problems) > 0 {
		fmt.Fprintln(os.Stderr, "repocheck:", len(problems), "problem(s):")
		fmt.Fprintln(os.Stderr, strings.Join(problems, "\n"))
		os.Exit(1)
	}
	fmt.Printf("repocheck: ok: %d tracked files under %d bytes, Go files under %d lines, links of %d Markdown files resolve\n", len(tracked), *maxBytes, *maxGoLines, flag.NArg())
}
