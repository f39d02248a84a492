package bolt_test

import (
	"context"
	"testing"

	"github.com/runfleet/runfleet/internal/store/bolt"
)

// A store opened WithNoSync is the same store: its commits reach the file
// (through the page cache) and a later Open, with or without the option,
// reads them.
func TestNoSyncStoreKeepsItsWritesAcrossReopen(t *testing.T) {
	ctx := context.Background()
	s, path := openTemp(t, bolt.WithNoSync())
	inst := pendingInstance("p", 1)
	if err := s.CreateInstance(ctx, admit(inst, 1)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := bolt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if got, err := s2.GetInstance(ctx, inst.Name); err != nil || got.Version != 1 {
		t.Fatalf("GetInstance after reopen = %+v, %v", got, err)
	}
}
