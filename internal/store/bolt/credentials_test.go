package bolt_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/store/bolt"
	"github.com/runfleet/runfleet/internal/testclock"
)

// PurgeExpiredCredentials is embedded mode's stand-in for DynamoDB's TTL on
// credentials: it removes exactly the expired records, and a record that
// was replaced after its first expiry key was written survives.
func TestPurgeExpiredCredentials(t *testing.T) {
	clock := testclock.At(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	s, _ := openTemp(t, bolt.WithClock(clock.Now))
	ctx := context.Background()

	put := func(name string, attempt int, ttl time.Duration) {
		t.Helper()
		err := s.PutRunnerCredentials(ctx, store.RunnerCredentials{Instance: name, CreateAttempt: attempt, EncodedJITConfig: "e30="}, ttl)
		if err != nil {
			t.Fatal(err)
		}
	}
	if n, err := s.PurgeExpiredCredentials(ctx); err != nil || n != 0 {
		t.Fatalf("purge of a store without credentials = %d, %v", n, err)
	}
	put("short", 1, time.Minute)
	put("long", 1, time.Hour)
	put("renewed", 1, time.Minute)
	put("renewed", 2, time.Hour) // its first expiry key is now stale

	clock.Advance(2 * time.Minute)
	n, err := s.PurgeExpiredCredentials(ctx)
	if err != nil || n != 1 {
		t.Fatalf("purge = %d, %v; want 1 (only \"short\")", n, err)
	}
	if _, err := s.GetRunnerCredentials(ctx, "short"); !errors.Is(err, store.ErrCredentialsNotFound) {
		t.Fatalf("short after purge: %v", err)
	}
	for _, name := range []string{"long", "renewed"} {
		if _, err := s.GetRunnerCredentials(ctx, name); err != nil {
			t.Fatalf("%s was purged before its expiry: %v", name, err)
		}
	}
	if n, err := s.PurgeExpiredCredentials(ctx); err != nil || n != 0 {
		t.Fatalf("second purge = %d, %v; want 0", n, err)
	}
	clock.Advance(time.Hour)
	if n, err := s.PurgeExpiredCredentials(ctx); err != nil || n != 2 {
		t.Fatalf("purge after everything expired = %d, %v; want 2", n, err)
	}
}

// Credentials written by concurrent creates (group commit shares their
// transactions) each land, and a stale writer among them is refused alone.
func TestConcurrentCredentialWrites(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	const writers = 16
	if err := s.PutRunnerCredentials(ctx, store.RunnerCredentials{Instance: "contended", CreateAttempt: 5, EncodedJITConfig: "e30="}, time.Hour); err != nil {
		t.Fatal(err)
	}
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			name, attempt := "w-"+string(rune('a'+i)), 1
			if i == 0 {
				name, attempt = "contended", 4
			}
			errs[i] = s.PutRunnerCredentials(ctx, store.RunnerCredentials{Instance: name, CreateAttempt: attempt, EncodedJITConfig: "e30="}, time.Hour)
		})
	}
	wg.Wait()
	if !errors.Is(errs[0], store.ErrStaleCredentials) {
		t.Fatalf("stale writer: %v, want ErrStaleCredentials", errs[0])
	}
	for i := 1; i < writers; i++ {
		if errs[i] != nil {
			t.Fatalf("writer %d: %v", i, errs[i])
		}
		if _, err := s.GetRunnerCredentials(ctx, "w-"+string(rune('a'+i))); err != nil {
			t.Fatalf("writer %d's credentials: %v", i, err)
		}
	}
	if got, _ := s.GetRunnerCredentials(ctx, "contended"); got == nil || got.CreateAttempt != 5 {
		t.Fatalf("the stale write changed the stored attempt: %+v", got)
	}
}
