package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

var jobRaceTests = []contractTest{
	{"Race/SameJobCreatedOnce", raceSameJobCreatedOnce},
	{"Race/OneJobWinnerPerVersion", raceOneJobWinnerPerVersion},
	{"Race/AdmissionsForOneJobSameName", raceAdmissionsForOneJobSameName},
	{"Race/AdmissionsForOneJobDistinctNames", raceAdmissionsForOneJobDistinctNames},
}

// The same queued event arriving many times at once records one job.
func raceSameJobCreatedOnce(t *testing.T, s store.Store) {
	ctx := context.Background()
	jobs := make([]*runner.Job, racers)
	winner := race{
		prepare: func(i int) error {
			jobs[i] = newJob("p", 1)
			jobs[i].Owner = runner.Owner{Org: fmt.Sprintf("racer-%d", i)}
			return nil
		},
		write: func(i int) error { return s.CreateJob(ctx, jobs[i]) },
		lost:  is(store.ErrJobExists),
	}.run(t)
	requireSameJob(t, jobs[winner], mustGetJob(t, s, jobs[winner].Key()))
	requireOpenJobs(t, s, jobs[winner].Key())
}

// Every racer reads version 1, then all compare-and-set at once, each to a
// different next state: exactly one wins and its write is what is stored.
func raceOneJobWinnerPerVersion(t *testing.T, s store.Store) {
	ctx := context.Background()
	j := newJob("p", 1)
	mustCreateJob(t, s, j)

	// Every status open may move to (unmatched is only ever created).
	var targets []runner.JobStatus
	for _, to := range runner.AllJobStatuses {
		if runner.CanJobTransition(runner.JobOpen, to) {
			targets = append(targets, to)
		}
	}
	writes, winner := versionRace(t,
		func() (*runner.Job, error) { return s.GetJob(ctx, j.Key()) },
		toTargets(targets, func(next *runner.Job, i int) { next.RunnerName = fmt.Sprintf("racer-%d", i) }),
		func(next *runner.Job) error { return s.UpdateJob(ctx, runner.JobOpen, next) },
		isConflict(store.KindJob, j.Key(), runner.JobOpen, 1))
	got := mustGetJob(t, s, j.Key())
	if got.Version != 2 {
		t.Fatalf("final Version = %d, want 2", got.Version)
	}
	requireSameJob(t, writes[winner], got)
	if got.Status == runner.JobOpen || got.Status == runner.JobWaiting {
		requireOpenJobs(t, s, j.Key())
	} else {
		requireOpenJobs(t, s)
	}
}

// admissionRace runs racers admissions, each prepared from the same read of
// one open job, and returns the index of the one that won; every other
// must have lost with an error lost allows, and written nothing.
func admissionRace(t *testing.T, s store.Store, prepare func(i int, read *runner.Job) (*runner.Instance, *runner.Job), lost func(error) bool) (winner int, admitted []store.Admission) {
	t.Helper()
	ctx := context.Background()
	j := newJob("p", 1)
	mustCreateJob(t, s, j)

	admitted = make([]store.Admission, racers)
	winner = race{
		prepare: func(i int) error {
			read, err := s.GetJob(ctx, j.Key())
			if err != nil {
				return err
			}
			inst, next := prepare(i, read)
			admitted[i] = store.Admission{Instance: inst, MaxRunners: roomy, Job: next, JobFrom: runner.JobOpen}
			return nil
		},
		write: func(i int) error { return s.CreateInstance(ctx, admitted[i]) },
		lost:  lost,
	}.run(t)
	got := mustGetJob(t, s, j.Key())
	requireSameJob(t, admitted[winner].Job, got)
	if got.Version != 2 || got.Made != 1 || got.Instance != admitted[winner].Instance.Name {
		t.Fatalf("job after the race: version %d, made %d, instance %q; want the winner's", got.Version, got.Made, got.Instance)
	}
	// The pool counter matches what is live: the losers took no slot.
	live, err := s.ListInstancesByPool(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	requireNames(t, "ListInstancesByPool", live, admitted[winner].Instance.Name)
	requireUsage(t, s, "p", len(live))
	return winner, admitted
}

// Workers handling the same job at once (a redelivered message, a
// reconciler pass) all pick the job's next instance name: one admission
// wins, the others learn the instance exists or the job moved on.
func raceAdmissionsForOneJobSameName(t *testing.T, s store.Store) {
	admissionRace(t, s, func(_ int, read *runner.Job) (*runner.Instance, *runner.Job) {
		return nextInstanceFor(read)
	}, func(err error) bool {
		return errors.Is(err, store.ErrAlreadyExists) || errors.Is(err, store.ErrConflict)
	})
}

// With a different instance name per racer, only the job's compare-and-set
// stands between them: one wins, every other is a job conflict and leaves
// no instance behind.
func raceAdmissionsForOneJobDistinctNames(t *testing.T, s store.Store) {
	winner, admitted := admissionRace(t, s, func(i int, read *runner.Job) (*runner.Instance, *runner.Job) {
		inst, next := nextInstanceFor(read)
		inst.Name = fmt.Sprintf("%s-racer%d", inst.Name, i)
		next.Instance = inst.Name
		return inst, next
	}, func(err error) bool {
		var ce *store.ConflictError
		return errors.As(err, &ce) && ce.Kind == store.KindJob
	})
	for i, a := range admitted {
		if i != winner {
			requireNotFound(t, s, a.Instance.Name)
		}
	}
}
