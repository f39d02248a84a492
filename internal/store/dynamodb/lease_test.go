package dynamodb

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
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

// A once-only lease (a replica life's liveness, a machine's cache binding)
// carries a ttl an hour past its expiry, moved on by each renewal, and
// DynamoDB's own expiry deletes it; once released it may go at once.
func TestOnceOnlyLeaseCarriesTTL(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t, testenv.DynamoDB(t))
	at := time.Date(2031, time.March, 1, 12, 0, 0, 0, time.UTC)
	ttlOf := func(name string) string {
		t.Helper()
		return stringAttr(rawItem(t, s, "LEASE#"+name), "ttl")
	}
	held, err := s.AcquireLease(ctx, "replica/a1", "a1", 15*time.Second, at)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ttlOf("replica/a1"), at.Add(15*time.Second+store.DisposableLeaseGrace).Unix(); got != strconv.FormatInt(want, 10) {
		t.Errorf("ttl after acquire = %s, want %d", got, want)
	}
	held, err = s.RenewLease(ctx, held, 15*time.Second, at.Add(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ttlOf("replica/a1"), at.Add(20*time.Second+store.DisposableLeaseGrace).Unix(); got != strconv.FormatInt(want, 10) {
		t.Errorf("ttl after renewal = %s, want %d", got, want)
	}
	if _, err := s.AcquireLease(ctx, "cache-job/i-1", "digest", 6*time.Hour, at); err != nil {
		t.Fatal(err)
	}
	if ttlOf("cache-job/i-1") == "" {
		t.Error("a cache binding has no ttl")
	}
	if err := s.ReleaseLease(ctx, held); err != nil {
		t.Fatal(err)
	}
	if ttlOf("replica/a1") == "" {
		t.Error("a released replica life has no ttl")
	}
}
