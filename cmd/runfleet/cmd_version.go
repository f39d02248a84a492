package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// The build stamps these from git (the Makefile's LDFLAGS):
//
//	-ldflags "-X main.version=v1.2.3 -X main.commit=0123456789ab -X main.date=2025-01-02T03:04:05Z"
//
// A plain `go build` leaves them unset; commit then falls back to what the
// Go toolchain recorded (vcs.revision), and date to its vcs.time.
var (
	version = "dev"
	commit  = ""
	date    = ""
)

func (c *cli) version(args []string) int {
	fs := c.newFlags("version", "runfleet version [-o table|json]", "Prints runfleet's version, the commit and date it was built from, and the Go version and platform.")
	var asJSON bool
	addOutputFlags(fs, &asJSON)
	if _, status, done := parse(fs, args); done {
		return status
	}
	b := currentBuild()
	if asJSON {
		return c.printJSON(map[string]any{
			"version": b.version, "commit": b.commit, "date": b.date, "modified": b.dirty,
			"go": runtime.Version(), "os": runtime.GOOS, "arch": runtime.GOARCH,
		})
	}
	fmt.Fprintln(c.stdout, b.String())
	return exitOK
}

// build is what one binary knows about how it was made.
type build struct {
	version, commit, date string
	dirty                 bool
}

// String is the one line `runfleet version` prints, e.g.
// "runfleet v0.1.0 (commit 0123456789ab of 2025-01-02T03:04:05Z, go1.26.8 linux/amd64)";
// the date is the commit's, so a rebuild of the same commit prints the same.
func (b build) String() string {
	s := "runfleet " + b.version + " ("
	if b.commit != "" {
		s += "commit " + b.commit
		if b.dirty {
			s += "-dirty"
		}
		if b.date != "" {
			s += " of " + b.date
		}
		s += ", "
	}
	return s + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + ")"
}

// currentBuild prefers the stamped values and fills the gaps from the
// build info the Go toolchain embeds when it builds inside a git checkout.
func currentBuild() build {
	b := build{version: version, commit: commit, date: date}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	for _, kv := range info.Settings {
		switch kv.Key {
		case "vcs.revision":
			if b.commit == "" {
				b.commit = kv.Value
			}
		case "vcs.time":
			if b.date == "" {
				b.date = kv.Value
			}
		case "vcs.modified":
			b.dirty = kv.Value == "true"
		}
	}
	if len(b.commit) > 12 {
		b.commit = b.commit[:12]
	}
	return b
}
