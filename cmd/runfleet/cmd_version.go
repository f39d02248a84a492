package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is set at build time: -ldflags "-X main.version=v1.2.3".
var version = "dev"

func (c *cli) version(args []string) int {
	fs := c.newFlags("version", "runfleet version", "Prints runfleet's version, the Go version it was built with and, when known, the commit.")
	if _, status, done := parse(fs, args); done {
		return status
	}
	fmt.Fprintln(c.stdout, versionString())
	return exitOK
}

func versionString() string {
	s := fmt.Sprintf("runfleet %s (%s %s/%s", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if info, ok := debug.ReadBuildInfo(); ok {
		var rev, dirty string
		for _, kv := range info.Settings {
			switch kv.Key {
			case "vcs.revision":
				rev = kv.Value
			case "vcs.modified":
				if kv.Value == "true" {
					dirty = "-dirty"
				}
			}
		}
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if rev != "" {
			s += ", commit " + rev + dirty
		}
	}
	return s + ")"
}
