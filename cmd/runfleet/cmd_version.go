package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is set at build time: -ldflags "-X main.version=v1.2.3".
var version = "dev"

func (c *cli) version(args []string) int {
	fs := c.newFlags("version", "runfleet version [-o table|json]", "Prints runfleet's version, the Go version it was built with and, when known, the commit.")
	var asJSON bool
	addOutputFlags(fs, &asJSON)
	if _, status, done := parse(fs, args); done {
		return status
	}
	if asJSON {
		rev, dirty := buildCommit()
		return c.printJSON(map[string]any{
			"version": version, "go": runtime.Version(), "os": runtime.GOOS, "arch": runtime.GOARCH,
			"commit": rev, "modified": dirty,
		})
	}
	fmt.Fprintln(c.stdout, versionString())
	return exitOK
}

func versionString() string {
	s := fmt.Sprintf("runfleet %s (%s %s/%s", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if rev, dirty := buildCommit(); rev != "" {
		s += ", commit " + rev
		if dirty {
			s += "-dirty"
		}
	}
	return s + ")"
}

// buildCommit is the commit the binary was built from (12 digits), and
// whether the tree had changes; "" when the build did not record it.
func buildCommit() (rev string, dirty bool) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "", false
	}
	for _, kv := range info.Settings {
		switch kv.Key {
		case "vcs.revision":
			rev = kv.Value
		case "vcs.modified":
			dirty = kv.Value == "true"
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	return rev, dirty
}
