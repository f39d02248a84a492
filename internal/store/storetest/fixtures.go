package storetest

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// roomy is a maxRunners large enough that capacity never gets in the way of
// a test that is about something else.
const roomy = 1000

// now returns the current instant at the millisecond precision every store
// must keep.
func now() time.Time { return time.Now().Truncate(time.Millisecond) }

// newInstance returns a minimal pending_create instance, as the engine
// writes one for a queued job.
func newInstance(pool string, jobID int64) *runner.Instance {
	at := now()
	return &runner.Instance{
		Name:            runner.InstanceName(pool, jobID, 1),
		Pool:            pool,
		Status:          runner.StatusPendingCreate,
		RunnerStatus:    runner.RunnerPending,
		JobID:           jobID,
		RunAttempt:      1,
		Owner:           runner.Owner{Org: "octo-org"},
		Labels:          []string{"self-hosted", "linux"},
		CreatedAt:       at,
		UpdatedAt:       at,
		StatusChangedAt: at,
	}
}

// fullInstance sets every field of runner.Instance to a distinctive non-zero
// value, with times in a non-UTC zone at millisecond precision, so a
// round trip shows any field a store drops or mangles.
func fullInstance(pool string) *runner.Instance {
	zone := time.FixedZone("UTC+5:30", 5*3600+1800)
	base := time.Date(2031, time.March, 14, 15, 9, 26, 535_000_000, zone)
	return &runner.Instance{
		Name:             runner.InstanceName(pool, 9_007_199_254_740_993, 3),
		Pool:             pool,
		Status:           runner.StatusPendingCreate,
		RunnerStatus:     runner.RunnerInstalling,
		JobID:            9_007_199_254_740_993, // above 2^53: must not pass through a float64
		RunAttempt:       3,
		JobQueuedAt:      base.Add(-90 * time.Second),
		ActiveJobID:      9_007_199_254_740_995,
		ActiveRunAttempt: 6,
		Interruption:     runner.InterruptionSpot,
		InterruptedAt:    base.Add(4 * time.Minute),
		InterruptedSince: base.Add(3 * time.Minute),
		Owner:            runner.Owner{Enterprise: "acme"},
		InstallationID:   4_294_967_297,
		Labels:           []string{"self-hosted", "Linux", "x64", "gpu: \"a100\""},
		GitHubRunnerID:   1_234_567_890_123,
		RunnerRemoved:    true,
		NotBusySince:     base.Add(3 * time.Minute),
		ProviderID:       "i-0abc/def ünïcode",
		ProviderFault:    "quota exceeded:\n\tline two",
		MachineType:      "m7g.large",
		Market:           runner.MarketSpot,
		MachineAt:        base.Add(5 * time.Second),
		// Every field set, fractions a float32 or a decimal string cut
		// short would change.
		Cost:             &runner.Cost{USD: 0.123457, USDPerHour: 0.0816, Seconds: 5_447, Unknown: "not a price: \"x\""},
		Repository:       "octo-org/ünïcode-repo",
		Attempts:         7,
		NextAttemptAt:    base.Add(90 * time.Second),
		WaitingForGitHub: base.Add(95 * time.Second),
		CreateAttempt:    2,
		Claim:            "message 9f3c/ünï#2",
		ClaimUntil:       base.Add(100 * time.Second),
		Version:          0,
		CreatedAt:        base,
		UpdatedAt:        base.Add(time.Millisecond),
		StatusChangedAt:  base.Add(2 * time.Millisecond),
		ExpiresAt:        base.Add(72 * time.Hour),
	}
}

// requireEveryFieldSet fails when a field of a fixture (a pointer to a
// record struct) is zero, so adding a field to runner.Instance or
// runner.Job without extending its fixture is caught here rather than
// silently left out of the round-trip check. Version is exempt: the store
// sets it.
func requireEveryFieldSet(t *testing.T, fixture any) {
	t.Helper()
	v := reflect.ValueOf(fixture).Elem()
	for i := 0; i < v.NumField(); i++ {
		name := v.Type().Field(i).Name
		if name == "Version" {
			continue
		}
		if v.Field(i).IsZero() {
			t.Fatalf("storetest fixture leaves %s.%s zero: give it a value so its round trip is checked", v.Type(), name)
		}
	}
}

// requireSameInstance compares every field (see requireSameRecord).
func requireSameInstance(t *testing.T, want, got *runner.Instance) {
	t.Helper()
	if got == nil {
		t.Fatalf("instance %q: got nil", want.Name)
	}
	requireSameRecord(t, "instance "+want.Name, want, got)
}

var timeType = reflect.TypeFor[time.Time]()

// requireSameRecord compares two records (pointers to the same struct type)
// field by field: times with Equal, since a store may drop the location; a
// nil slice equal to an empty one; everything else exactly. It walks the
// fields by reflection, so a field added to a record is compared without
// anyone remembering to list it.
func requireSameRecord(t *testing.T, what string, want, got any) {
	t.Helper()
	w, g := reflect.ValueOf(want).Elem(), reflect.ValueOf(got).Elem()
	for i := 0; i < w.NumField(); i++ {
		name := w.Type().Field(i).Name
		wf, gf := w.Field(i), g.Field(i)
		switch {
		case wf.Type() == timeType:
			if wt, gt := wf.Interface().(time.Time), gf.Interface().(time.Time); !wt.Equal(gt) {
				t.Errorf("%s: %s = %v, want %v", what, name, gt, wt)
			}
		case wf.Kind() == reflect.Slice && wf.Len() == 0 && gf.Len() == 0:
		case !reflect.DeepEqual(wf.Interface(), gf.Interface()):
			t.Errorf("%s: %s = %#v, want %#v", what, name, gf.Interface(), wf.Interface())
		}
	}
}

// admit is the admission of an instance no job asked for.
func admit(inst *runner.Instance, maxRunners int) store.Admission {
	return store.Admission{Instance: inst, MaxRunners: maxRunners}
}

func mustCreate(t *testing.T, s store.Store, inst *runner.Instance, maxRunners int) {
	t.Helper()
	if err := s.CreateInstance(context.Background(), admit(inst, maxRunners)); err != nil {
		t.Fatalf("CreateInstance(%s): %v", inst.Name, err)
	}
}

func mustGet(t *testing.T, s store.Store, name string) *runner.Instance {
	t.Helper()
	got, err := s.GetInstance(context.Background(), name)
	if err != nil {
		t.Fatalf("GetInstance(%s): %v", name, err)
	}
	return got
}

// mustMove walks the stored instance through statuses with one
// compare-and-set each, and returns the last version written.
func mustMove(t *testing.T, s store.Store, name string, statuses ...runner.Status) *runner.Instance {
	t.Helper()
	cur := mustGet(t, s, name)
	for _, to := range statuses {
		next, err := cur.Transition(to, now())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := s.UpdateInstance(context.Background(), cur.Status, next); err != nil {
			t.Fatalf("UpdateInstance(%s %s -> %s): %v", name, cur.Status, to, err)
		}
		cur = next
	}
	return cur
}

// pathToDeleted is the engine's ordinary way from pending_create to deleted.
var pathToDeleted = []runner.Status{runner.StatusPendingDelete, runner.StatusDeleting, runner.StatusDeleted}

func requireUsage(t *testing.T, s store.Store, pool string, want int) {
	t.Helper()
	got, err := s.PoolUsage(context.Background(), pool)
	if err != nil {
		t.Fatalf("PoolUsage(%s): %v", pool, err)
	}
	if got != want {
		t.Fatalf("PoolUsage(%s) = %d, want %d", pool, got, want)
	}
}

func requireNotFound(t *testing.T, s store.Store, name string) {
	t.Helper()
	got, err := s.GetInstance(context.Background(), name)
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetInstance(%s) = %+v, %v; want ErrNotFound", name, got, err)
	}
}

// requireConflict checks err is a *store.ConflictError naming the write that
// lost: its record and the status and version it expected.
func requireConflict[S ~string](t *testing.T, err error, kind store.Kind, key string, from S, version int64) {
	t.Helper()
	var ce *store.ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("want *store.ConflictError, got %T: %v", err, err)
	}
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("errors.Is(%v, ErrConflict) is false", err)
	}
	want := store.Expect(kind, key, from, version).Conflict()
	if *ce != *want {
		t.Fatalf("ConflictError = %+v, want %+v", ce, want)
	}
}

func names(list []*runner.Instance) map[string]runner.Status {
	out := make(map[string]runner.Status, len(list))
	for _, in := range list {
		out[in.Name] = in.Status
	}
	return out
}

func requireNames(t *testing.T, what string, list []*runner.Instance, want ...string) {
	t.Helper()
	got := names(list)
	if len(list) != len(want) {
		t.Fatalf("%s: got %d instances %v, want %v", what, len(list), got, want)
	}
	for _, n := range want {
		if _, ok := got[n]; !ok {
			t.Fatalf("%s: %q missing from %v", what, n, got)
		}
	}
}
