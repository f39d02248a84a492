package main

import (
	"strings"
	"testing"
)

// The replicas' DSN names the fresh schema whichever form the DSN has.
func TestWithSearchPath(t *testing.T) {
	for _, c := range []struct{ dsn, want string }{
		{"postgres://u@h:5432/db", "postgres://u@h:5432/db?search_path=s"},
		{"postgres://u@h:5432/db?sslmode=disable", "postgres://u@h:5432/db?sslmode=disable&search_path=s"},
		{"host=h dbname=db", "host=h dbname=db search_path=s"},
	} {
		if got := withSearchPath(c.dsn, "s"); got != c.want {
			t.Errorf("withSearchPath(%q) = %q, want %q", c.dsn, got, c.want)
		}
	}
}

// Replicas' ids repeat by construction and are not held against them;
// every other check still is.
func TestReplicaIDsAreNotComparedButEverythingElseIs(t *testing.T) {
	c := burstCheck{live: 3, wantLive: 3, sharedRunnerIDs: 2, sharedProviderIDs: 2}
	if c.ok() {
		t.Fatal("a lone server with shared ids passed")
	}
	c.idsPerReplica = true
	if !c.ok() {
		t.Fatalf("replicas with repeated ids failed: %s", verdict(c))
	}
	c.createdTwice = []string{"bench-1-1 ×2"}
	if c.ok() || !strings.Contains(verdict(c), "created twice") {
		t.Fatalf("replicas with a create logged twice: %v, %s", c.ok(), verdict(c))
	}
}
