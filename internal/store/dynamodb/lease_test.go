package dynamodb

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/testenv"
)

// A lease is one LEASE#<name> item outside the live index and without a
// TTL, and a release keeps it (free) so its version never goes back.
func TestLeaseLayout(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t, testenv.DynamoDB(t))
	at := time.Date(2031, time.March, 1, 12, 0, 0, 0, time.UTC)
	held, err := s.AcquireLease(ctx, "listener/linux", "replica-a", time.Minute, at)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ReleaseLease(ctx, held); err != nil {
		t.Fatal(err)
	}
	item := rawItem(t, s, "LEASE#listener/linux")
	if got := stringAttr(item, "version"); got != "2" {
		t.Errorf("version = %q, want 2 (acquired, released)", got)
	}
	for _, attr := range []string{"live_shard", "live_sort", "ttl"} {
		if _, ok := item[attr]; ok {
			t.Errorf("lease item has %s", attr)
		}
	}
	var stored runner.Lease
	if err := json.Unmarshal([]byte(stringAttr(item, "lease")), &stored); err != nil {
		t.Fatal(err)
	}
	if stored.Name != "listener/linux" || stored.Holder != "" || stored.Version != 2 {
		t.Errorf("stored lease = %+v, want listener/linux free at version 2", stored)
	}
}
