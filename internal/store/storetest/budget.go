package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/runfleet/runfleet/internal/store"
)

var budgetTests = []contractTest{
	{"Budget/NeverWrittenIsEmpty", budgetNeverWrittenIsEmpty},
	{"Budget/ChangeWritesTheNextVersion", budgetChangeWritesTheNextVersion},
	{"Budget/CredentialsAreSeparate", budgetCredentialsAreSeparate},
	{"Race/ConcurrentBudgetChangesAllCount", raceConcurrentBudgetChangesAllCount},
}

// The store does not read a budget's state; the suite's is a counter.
type testBudget struct {
	Taken int `json:"taken"`
}

func decodeBudget(t *testing.T, state []byte) testBudget {
	t.Helper()
	var b testBudget
	if len(state) > 0 {
		if err := json.Unmarshal(state, &b); err != nil {
			t.Errorf("stored state %q: %v", state, err)
		}
	}
	return b
}

// take is a change that takes n more; it may run more than once.
func take(t *testing.T, n int) func([]byte) ([]byte, error) {
	return func(state []byte) ([]byte, error) {
		b := decodeBudget(t, state)
		b.Taken += n
		return json.Marshal(b)
	}
}

func requireBudget(t *testing.T, s store.Store, credential string, taken int, version int64) {
	t.Helper()
	got, err := s.GetBudget(context.Background(), credential)
	if err != nil {
		t.Fatalf("GetBudget(%s): %v", credential, err)
	}
	if got.Credential != credential || got.Version != version || decodeBudget(t, got.State).Taken != taken {
		t.Fatalf("stored budget %s = %+v (%s), want %d taken at version %d", credential, got, got.State, taken, version)
	}
}

func budgetNeverWrittenIsEmpty(t *testing.T, s store.Store) {
	got, err := s.GetBudget(context.Background(), "installation:1")
	if err != nil {
		t.Fatalf("GetBudget: %v", err)
	}
	if got.Credential != "installation:1" || got.Version != 0 || got.State != nil {
		t.Fatalf("budget never written = %+v, want an empty record at version 0", got)
	}
}

func budgetChangeWritesTheNextVersion(t *testing.T, s store.Store) {
	ctx := context.Background()
	const cred = "installation:7"
	var seen []byte
	written, err := s.ChangeBudget(ctx, cred, func(state []byte) ([]byte, error) {
		seen = state
		return take(t, 5)(state)
	})
	if err != nil {
		t.Fatalf("first ChangeBudget: %v", err)
	}
	if seen != nil || written == nil || written.Version != 1 || written.Credential != cred {
		t.Fatalf("first change saw %q and wrote %+v, want nil then version 1", seen, written)
	}
	if _, err := s.ChangeBudget(ctx, cred, take(t, 3)); err != nil {
		t.Fatal(err)
	}
	requireBudget(t, s, cred, 8, 2)

	// Nothing to write (nil) writes nothing, and is no error.
	written, err = s.ChangeBudget(ctx, cred, func(state []byte) ([]byte, error) {
		if decodeBudget(t, state).Taken != 8 {
			t.Errorf("change saw %s, want 8 taken", state)
		}
		return nil, nil
	})
	if err != nil || written != nil {
		t.Fatalf("a change with nothing to write: %+v, %v", written, err)
	}
	// A change's error comes back, and nothing is written.
	boom := errors.New("boom")
	if _, err := s.ChangeBudget(ctx, cred, func([]byte) ([]byte, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("a failing change: %v, want its error", err)
	}
	requireBudget(t, s, cred, 8, 2)
}

func budgetCredentialsAreSeparate(t *testing.T, s store.Store) {
	ctx := context.Background()
	for i, cred := range []string{"installation:1", "installation:2", "app"} {
		for range i + 1 {
			if _, err := s.ChangeBudget(ctx, cred, take(t, 1)); err != nil {
				t.Fatal(err)
			}
		}
	}
	requireBudget(t, s, "installation:1", 1, 1)
	requireBudget(t, s, "installation:2", 2, 2)
	requireBudget(t, s, "app", 3, 3)
}

// Many processes spend one credential's budget at once: a change lost to
// another is read and made again, so none is lost and none counted twice.
func raceConcurrentBudgetChangesAllCount(t *testing.T, s store.Store) {
	const writers, each = 8, 5
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed []error
	for range writers {
		wg.Go(func() {
			for range each {
				if _, err := s.ChangeBudget(ctx, "installation:9", take(t, 1)); err != nil {
					mu.Lock()
					failed = append(failed, err)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if len(failed) > 0 {
		t.Fatalf("%d of %d changes failed, first: %v", len(failed), writers*each, failed[0])
	}
	requireBudget(t, s, "installation:9", writers*each, writers*each)
}
