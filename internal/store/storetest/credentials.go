package storetest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// credentialTests pin down store.Credentials, part of every store.Store:
// the JIT configuration a booting machine fetches with its instance token.
var credentialTests = []contractTest{
	{"Credentials/RoundTrip", credentialsRoundTrip},
	{"Credentials/MissingIsNotFound", credentialsMissingIsNotFound},
	{"Credentials/LaterAttemptReplaces", credentialsLaterAttemptReplaces},
	{"Credentials/EarlierAttemptRefused", credentialsEarlierAttemptRefused},
	{"Credentials/SameAttemptRewritten", credentialsSameAttemptRewritten},
	{"Credentials/DeleteIsIdempotent", credentialsDeleteIsIdempotent},
	{"Credentials/ExpireAfterTTL", credentialsExpireAfterTTL},
	{"Credentials/KeptApartFromInstances", credentialsKeptApartFromInstances},
	{"Credentials/InvalidArgumentsRefused", credentialsInvalidArgumentsRefused},
}

// jitConfig is shaped like GitHub's encoded_jit_config (base64 of a JSON
// object of base64 files) and long enough to cross any small-value path.
func jitConfig(tag string) string {
	return "eyIucnVubmVyIjoi" + strings.Repeat(tag, 600) + "In0="
}

func mustPutCredentials(t *testing.T, c store.Credentials, rc store.RunnerCredentials, ttl time.Duration) {
	t.Helper()
	if err := c.PutRunnerCredentials(context.Background(), rc, ttl); err != nil {
		t.Fatalf("PutRunnerCredentials(%s attempt %d): %v", rc.Instance, rc.CreateAttempt, err)
	}
}

func mustGetCredentials(t *testing.T, c store.Credentials, instance string) *store.RunnerCredentials {
	t.Helper()
	got, err := c.GetRunnerCredentials(context.Background(), instance)
	if err != nil {
		t.Fatalf("GetRunnerCredentials(%s): %v", instance, err)
	}
	return got
}

func requireNoCredentials(t *testing.T, c store.Credentials, instance string) {
	t.Helper()
	got, err := c.GetRunnerCredentials(context.Background(), instance)
	if !errors.Is(err, store.ErrCredentialsNotFound) {
		t.Fatalf("GetRunnerCredentials(%s) = %v, %v; want ErrCredentialsNotFound", instance, got, err)
	}
}

func credentialsRoundTrip(t *testing.T, s store.Store) {
	const ttl = 25 * time.Minute
	before := now()
	want := store.RunnerCredentials{Instance: "runfleet-linux-7-1", CreateAttempt: 2, EncodedJITConfig: jitConfig("a")}
	mustPutCredentials(t, s, want, ttl)
	got := mustGetCredentials(t, s, want.Instance)
	if got.Instance != want.Instance || got.CreateAttempt != want.CreateAttempt || got.EncodedJITConfig != want.EncodedJITConfig {
		t.Fatalf("got %+v (config %d bytes), want instance %s attempt %d and the config as put (%d bytes)",
			got, len(got.EncodedJITConfig), want.Instance, want.CreateAttempt, len(want.EncodedJITConfig))
	}
	if got.ExpiresAt.Before(before.Add(ttl)) || got.ExpiresAt.After(time.Now().Add(ttl+time.Second)) {
		t.Fatalf("ExpiresAt = %v, want about now + %v", got.ExpiresAt, ttl)
	}
}

func credentialsMissingIsNotFound(t *testing.T, s store.Store) {
	requireNoCredentials(t, s, "runfleet-linux-404-1")
}

func credentialsLaterAttemptReplaces(t *testing.T, s store.Store) {
	const name = "runfleet-linux-8-1"
	mustPutCredentials(t, s, store.RunnerCredentials{Instance: name, CreateAttempt: 1, EncodedJITConfig: jitConfig("1")}, time.Hour)
	mustPutCredentials(t, s, store.RunnerCredentials{Instance: name, CreateAttempt: 2, EncodedJITConfig: jitConfig("2")}, time.Hour)
	got := mustGetCredentials(t, s, name)
	if got.CreateAttempt != 2 || got.EncodedJITConfig != jitConfig("2") {
		t.Fatalf("after attempt 2's Put: attempt %d, config of attempt 2: %t", got.CreateAttempt, got.EncodedJITConfig == jitConfig("2"))
	}
}

func credentialsEarlierAttemptRefused(t *testing.T, s store.Store) {
	const name = "runfleet-linux-9-1"
	mustPutCredentials(t, s, store.RunnerCredentials{Instance: name, CreateAttempt: 3, EncodedJITConfig: jitConfig("3")}, time.Hour)
	err := s.PutRunnerCredentials(context.Background(), store.RunnerCredentials{Instance: name, CreateAttempt: 2, EncodedJITConfig: jitConfig("2")}, time.Hour)
	var stale *store.StaleCredentialsError
	if !errors.As(err, &stale) || !errors.Is(err, store.ErrStaleCredentials) {
		t.Fatalf("Put of an earlier attempt = %v, want *store.StaleCredentialsError", err)
	}
	if stale.Instance != name || stale.Attempt != 2 || stale.StoredAttempt != 3 {
		t.Fatalf("StaleCredentialsError = %+v, want instance %s attempt 2 stored 3", stale, name)
	}
	if got := mustGetCredentials(t, s, name); got.CreateAttempt != 3 || got.EncodedJITConfig != jitConfig("3") {
		t.Fatalf("a refused Put changed the record: attempt %d", got.CreateAttempt)
	}
}

// A worker retrying its own Put (or the SDK retrying one whose response was
// lost) must succeed.
func credentialsSameAttemptRewritten(t *testing.T, s store.Store) {
	const name = "runfleet-linux-10-1"
	mustPutCredentials(t, s, store.RunnerCredentials{Instance: name, CreateAttempt: 1, EncodedJITConfig: jitConfig("x")}, time.Hour)
	mustPutCredentials(t, s, store.RunnerCredentials{Instance: name, CreateAttempt: 1, EncodedJITConfig: jitConfig("y")}, time.Hour)
	if got := mustGetCredentials(t, s, name); got.EncodedJITConfig != jitConfig("y") {
		t.Fatal("the second Put of the same attempt did not replace the first")
	}
}

func credentialsDeleteIsIdempotent(t *testing.T, s store.Store) {
	ctx := context.Background()
	const name = "runfleet-linux-11-1"
	mustPutCredentials(t, s, store.RunnerCredentials{Instance: name, CreateAttempt: 1, EncodedJITConfig: jitConfig("d")}, time.Hour)
	for i := range 2 {
		if err := s.DeleteRunnerCredentials(ctx, name); err != nil {
			t.Fatalf("DeleteRunnerCredentials #%d: %v", i+1, err)
		}
		requireNoCredentials(t, s, name)
	}
	if err := s.DeleteRunnerCredentials(ctx, "runfleet-never-stored-1-1"); err != nil {
		t.Fatalf("DeleteRunnerCredentials of an unknown instance: %v", err)
	}
	// Deleted means a later Put of any attempt starts afresh.
	mustPutCredentials(t, s, store.RunnerCredentials{Instance: name, CreateAttempt: 1, EncodedJITConfig: jitConfig("e")}, time.Hour)
	mustGetCredentials(t, s, name)
}

// The store judges expiry itself (DynamoDB's sweeper is lazy), and an
// expired record of a later attempt no longer blocks an earlier one.
func credentialsExpireAfterTTL(t *testing.T, s store.Store) {
	const (
		name      = "runfleet-linux-12-1"
		ttl       = time.Second
		precision = 10 * time.Millisecond
	)
	put := time.Now()
	mustPutCredentials(t, s, store.RunnerCredentials{Instance: name, CreateAttempt: 5, EncodedJITConfig: jitConfig("t")}, ttl)
	mustGetCredentials(t, s, name)
	deadline := put.Add(ttl + 3*time.Second)
	for {
		time.Sleep(100 * time.Millisecond)
		_, err := s.GetRunnerCredentials(context.Background(), name)
		if errors.Is(err, store.ErrCredentialsNotFound) {
			break
		}
		if err != nil {
			t.Fatalf("GetRunnerCredentials: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("credentials still returned %v after their %v ttl", time.Since(put), ttl)
		}
	}
	if early := time.Since(put); early < ttl-precision {
		t.Fatalf("credentials expired after %v, before their %v ttl", early, ttl)
	}
	mustPutCredentials(t, s, store.RunnerCredentials{Instance: name, CreateAttempt: 1, EncodedJITConfig: jitConfig("u")}, time.Hour)
	if got := mustGetCredentials(t, s, name); got.CreateAttempt != 1 {
		t.Fatalf("after expiry, Put of attempt 1 stored attempt %d", got.CreateAttempt)
	}
}

// Credentials share the store with instances but are never listed or read
// as one, and an instance's writes never touch its credentials.
func credentialsKeptApartFromInstances(t *testing.T, s store.Store) {
	ctx := context.Background()
	inst := newInstance("apart", 13)
	mustCreate(t, s, inst, roomy)
	mustPutCredentials(t, s, store.RunnerCredentials{Instance: inst.Name, CreateAttempt: 1, EncodedJITConfig: jitConfig("k")}, time.Hour)
	mustPutCredentials(t, s, store.RunnerCredentials{Instance: "runfleet-apart-14-1", CreateAttempt: 1, EncodedJITConfig: jitConfig("l")}, time.Hour)

	live, err := s.ListLiveInstances(ctx)
	if err != nil {
		t.Fatal(err)
	}
	requireNames(t, "ListLiveInstances", live, inst.Name)
	byPool, err := s.ListInstancesByPool(ctx, "apart")
	if err != nil {
		t.Fatal(err)
	}
	requireNames(t, "ListInstancesByPool", byPool, inst.Name)
	requireNotFound(t, s, "runfleet-apart-14-1")
	requireUsage(t, s, "apart", 1)

	mustMove(t, s, inst.Name, runner.StatusCreating)
	if got := mustGetCredentials(t, s, inst.Name); got.EncodedJITConfig != jitConfig("k") {
		t.Fatal("an instance write changed its credentials")
	}
}

func credentialsInvalidArgumentsRefused(t *testing.T, s store.Store) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		rc   store.RunnerCredentials
		ttl  time.Duration
	}{
		{"empty instance", store.RunnerCredentials{CreateAttempt: 1, EncodedJITConfig: "x"}, time.Hour},
		{"attempt zero", store.RunnerCredentials{Instance: "runfleet-bad-1-1", EncodedJITConfig: "x"}, time.Hour},
		{"empty config", store.RunnerCredentials{Instance: "runfleet-bad-1-1", CreateAttempt: 1}, time.Hour},
		{"zero ttl", store.RunnerCredentials{Instance: "runfleet-bad-1-1", CreateAttempt: 1, EncodedJITConfig: "x"}, 0},
	} {
		if err := s.PutRunnerCredentials(ctx, tc.rc, tc.ttl); err == nil {
			t.Errorf("Put with %s succeeded, want an error", tc.name)
		}
	}
	requireNoCredentials(t, s, "runfleet-bad-1-1")
}
