package dynamodb

import (
	"context"
	"errors"
	"testing"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/testenv"
)

// An admission writes instance, pool slot and job together.
func TestAdmissionCreatesOrAdvancesTheJob(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t, testenv.DynamoDB(t))

	job := testJob("p", 1)
	a := admissionFor(job, "")
	if err := s.CreateInstance(ctx, a); err != nil {
		t.Fatal(err)
	}
	if a.Instance.Version != 1 || a.Job.Version != 1 {
		t.Fatalf("versions after a create: instance %d, job %d; want 1, 1", a.Instance.Version, a.Job.Version)
	}
	got, err := s.GetJob(ctx, job.Key())
	if err != nil || got.Instance != a.Instance.Name || got.Made != 1 || got.Version != 1 {
		t.Fatalf("GetJob = %+v, %v; want the admitted job naming its instance", got, err)
	}
	requireUsage(t, s, "p", 1)

	// The instance ended; the job, still open, gets its second one.
	mustMove(t, s, a.Instance, toDeleted...)
	ended := got.Clone()
	ended.Instance = ""
	if err := s.UpdateJob(ctx, runner.JobOpen, ended); err != nil {
		t.Fatal(err)
	}
	second := admissionFor(ended, runner.JobOpen)
	if err := s.CreateInstance(ctx, second); err != nil {
		t.Fatal(err)
	}
	if second.Instance.Name != job.InstanceFor(2) || second.Job.Version != 3 {
		t.Fatalf("second admission: instance %s, job version %d; want %s, 3", second.Instance.Name, second.Job.Version, job.InstanceFor(2))
	}
	got, err = s.GetJob(ctx, job.Key())
	if err != nil || got.Instance != job.InstanceFor(2) || got.Made != 2 || got.Version != 3 {
		t.Fatalf("GetJob = %+v, %v; want the second instance recorded at version 3", got, err)
	}
	requireUsage(t, s, "p", 1)
}

// Each failed condition maps to its typed error, in the documented order
// when several fail, and a refused admission writes nothing.
func TestAdmissionRefusals(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t, testenv.DynamoDB(t))

	// Pool "full" holds one instance of max 1; job 1 was admitted there.
	held := testJob("full", 1)
	heldAdmission := admissionFor(held, "")
	heldAdmission.MaxRunners = 1
	if err := s.CreateInstance(ctx, heldAdmission); err != nil {
		t.Fatal(err)
	}
	stored := heldAdmission.Job // version 1, open, names its instance
	// Job 2 exists, open, with no instance yet.
	other := testJob("full", 2)
	mustCreateJob(t, s, other)

	stale := stored.Clone()
	stale.Version = 7
	missing := testJob("full", 3)
	missing.Version = 1

	for _, c := range []struct {
		name  string
		a     store.Admission
		check func(error) bool
	}{
		{"taken name", store.Admission{Instance: testInstance("full", 1), MaxRunners: 10}, isErr(store.ErrAlreadyExists)},
		{"taken name in a full pool", store.Admission{Instance: testInstance("full", 1), MaxRunners: 1}, isErr(store.ErrAlreadyExists)},
		{"taken name with a job conflict", withJob(testInstance("full", 1), 10, stale, runner.JobOpen), isErr(store.ErrAlreadyExists)},
		{"full pool", store.Admission{Instance: testInstance("full", 9), MaxRunners: 1}, isErr(store.ErrPoolFull)},
		{"existing job", admissionWithMax(admissionFor(other, ""), 10), isErr(store.ErrJobExists)},
		{"existing job in a full pool", admissionWithMax(admissionFor(other, ""), 1), isErr(store.ErrJobExists)},
		{"stale job version", withJob(testInstance("full", 8), 10, stale, runner.JobOpen), isJobConflict(stale.Key(), runner.JobOpen, 7)},
		{"stale job in a full pool", withJob(testInstance("full", 8), 1, stale, runner.JobOpen), isJobConflict(stale.Key(), runner.JobOpen, 7)},
		{"job status moved", withJob(testInstance("full", 8), 10, stored.Clone(), runner.JobWaiting), isJobConflict(stored.Key(), runner.JobWaiting, 1)},
		{"missing job", withJob(testInstance("full", 8), 10, missing, runner.JobOpen), isJobConflict(missing.Key(), runner.JobOpen, 1)},
	} {
		t.Run(c.name, func(t *testing.T) {
			var jobBefore *runner.Job
			if c.a.Job != nil {
				jobBefore = c.a.Job.Clone()
			}
			err := s.CreateInstance(ctx, c.a)
			if !c.check(err) {
				t.Fatalf("got %v", err)
			}
			if c.a.Job != nil && c.a.Job.Version != jobBefore.Version {
				t.Fatalf("refused admission changed the caller's job Version to %d", c.a.Job.Version)
			}
		})
	}
	// Nothing of any refused admission was written.
	requireUsage(t, s, "full", 1)
	for _, name := range []string{testInstance("full", 8).Name, testInstance("full", 9).Name, other.InstanceFor(1)} {
		if _, err := s.GetInstance(ctx, name); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("instance %s of a refused admission: %v", name, err)
		}
	}
	for key, want := range map[string]int64{stored.Key(): 1, other.Key(): 1} {
		got, err := s.GetJob(ctx, key)
		if err != nil || got.Version != want {
			t.Errorf("job %s after refusals: %+v, %v; want version %d", key, got, err, want)
		}
	}
	if _, err := s.GetJob(ctx, missing.Key()); !errors.Is(err, store.ErrJobNotFound) {
		t.Errorf("missing job after a refused compare-and-set: %v", err)
	}
}

// A job with a JobFrom that makes no legal transition is refused before
// anything is sent.
func TestAdmissionChecksTheJobTransition(t *testing.T) {
	s := newTestStore(t, testenv.DynamoDB(t))
	job := testJob("p", 1)
	job.Status = runner.JobServed
	err := s.CreateInstance(context.Background(), withJob(testInstance("p", 1), 10, job, runner.JobClosed))
	var illegal *runner.IllegalTransitionError
	if !errors.As(err, &illegal) {
		t.Fatalf("got %v, want an *IllegalTransitionError", err)
	}
	requireUsage(t, s, "p", 0)
}

func isErr(target error) func(error) bool {
	return func(err error) bool { return errors.Is(err, target) }
}

// isJobConflict matches a *ConflictError naming the losing job write,
// which is also store.ErrConflict.
func isJobConflict(key string, from runner.JobStatus, version int64) func(error) bool {
	return func(err error) bool {
		var conflict *store.ConflictError
		return errors.As(err, &conflict) && errors.Is(err, store.ErrConflict) &&
			*conflict == *store.Expect(store.KindJob, key, from, version).Conflict()
	}
}

func withJob(inst *runner.Instance, maxRunners int, job *runner.Job, from runner.JobStatus) store.Admission {
	return store.Admission{Instance: inst, MaxRunners: maxRunners, Job: job, JobFrom: from}
}

func admissionWithMax(a store.Admission, maxRunners int) store.Admission {
	a.MaxRunners = maxRunners
	return a
}
