package dynamodb

import (
	"context"
	"encoding/hex"
	"sync"
	"testing"

	"github.com/runfleet/runfleet/internal/testenv"
)

// Every process sharing the table (here: stores racing to make the id
// first) reads the one id that won; another table has another.
func TestInstallationIDIsMadeOnceAndShared(t *testing.T) {
	ctx := context.Background()
	client := testenv.DynamoDB(t)
	first := newTestStore(t, client)

	const callers = 8
	ids := make([]string, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			ids[i], errs[i] = New(client, first.table).InstallationID(ctx)
		})
	}
	wg.Wait()
	for i := range callers {
		if errs[i] != nil {
			t.Fatalf("caller %d: %v", i, errs[i])
		}
		if ids[i] != ids[0] {
			t.Fatalf("callers disagree: %q and %q", ids[0], ids[i])
		}
	}
	if raw, err := hex.DecodeString(ids[0]); err != nil || len(raw) != 16 {
		t.Fatalf("id %q is not 128 bits of hex", ids[0])
	}
	if got, err := first.InstallationID(ctx); err != nil || got != ids[0] {
		t.Fatalf("a later call = %q, %v; want %q", got, err, ids[0])
	}
	if got := stringAttr(rawItem(t, first, "META#installation"), "installation_id"); got != ids[0] {
		t.Fatalf("stored id %q, want %q", got, ids[0])
	}

	other, err := newTestStore(t, client).InstallationID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if other == ids[0] {
		t.Fatal("two tables got the same installation id")
	}
}
