package storetest

import (
	"context"
	"testing"

	"github.com/runfleet/runfleet/internal/store"
)

var installationTests = []contractTest{
	{"InstallationID/StableAcrossCalls", installationIDStableAcrossCalls},
	{"InstallationID/ConcurrentCallersAgree", installationIDConcurrentCallersAgree},
}

func mustInstallationID(t *testing.T, s store.Store) string {
	t.Helper()
	id, err := s.InstallationID(context.Background())
	if err != nil {
		t.Fatalf("InstallationID: %v", err)
	}
	if id == "" {
		t.Fatal("InstallationID is empty")
	}
	return id
}

// The id is made once and then only read; another installation (another
// store) makes its own.
func installationIDStableAcrossCalls(t *testing.T, s store.Store) {
	first := mustInstallationID(t, s)
	for range 3 {
		if again := mustInstallationID(t, s); again != first {
			t.Fatalf("InstallationID changed from %q to %q", first, again)
		}
	}
	// Instances and jobs written since do not disturb it.
	mustCreate(t, s, newInstance("p", 1), roomy)
	mustCreateJob(t, s, newJob("p", 1))
	if again := mustInstallationID(t, s); again != first {
		t.Fatalf("InstallationID changed from %q to %q after other writes", first, again)
	}
}

// Every process of a fresh installation asks at once on its first start
// (each Lambda function, serve's workers): all must get the same id.
func installationIDConcurrentCallersAgree(t *testing.T, s store.Store) {
	ids := make([]string, racers)
	errs := make([]error, racers)
	startTogether(racers, func(int) {}, func(i int) {
		ids[i], errs[i] = s.InstallationID(context.Background())
	})
	for i := range ids {
		if errs[i] != nil {
			t.Fatalf("caller %d: %v", i, errs[i])
		}
		if ids[i] == "" || ids[i] != ids[0] {
			t.Fatalf("callers got different ids: %q", ids)
		}
	}
	if again := mustInstallationID(t, s); again != ids[0] {
		t.Fatalf("InstallationID after the race = %q, want %q", again, ids[0])
	}
}

// Two installations never share an id: the provider-side ownership marks
// derived from it keep one installation's runners out of another's reach.
func installationIDDistinctPerStore(t *testing.T, newStore func(t *testing.T) store.Store) {
	a, b := mustInstallationID(t, newStore(t)), mustInstallationID(t, newStore(t))
	if a == b {
		t.Fatalf("two fresh stores made the same installation id %q", a)
	}
}
