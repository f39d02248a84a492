package bolt_test

import (
	"context"
	"encoding/hex"
	"testing"

	"github.com/runfleet/runfleet/internal/store/bolt"
)

// The id is 128 random bits in hex, and a restarted serve reads the one it
// made before: provider-side marks made before the restart stay ours.
func TestInstallationIDSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	s, path := openTemp(t)
	id, err := s.InstallationID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if raw, err := hex.DecodeString(id); err != nil || len(raw) != 16 {
		t.Fatalf("InstallationID = %q, want 32 hex digits", id)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := bolt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if again, err := s2.InstallationID(ctx); err != nil || again != id {
		t.Fatalf("InstallationID after restart = %q, %v; want %q", again, err, id)
	}
}
