package bolt_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// Concurrent writes share commits, and every caller still gets the answer a
// serial run would give it: max_runners admits exactly that many, one of two
// racing compare-and-sets wins, one of two creates of a job records it.
func TestConcurrentWritesShareCommitsAndStaySerial(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	const (
		jobs       = 64
		maxRunners = 40
	)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		created  []*runner.Instance
		full     int
		winners  = map[string]int{}
		fresh    = map[string]int{}
		failures []error
	)
	fail := func(err error) {
		mu.Lock()
		failures = append(failures, err)
		mu.Unlock()
	}
	start := make(chan struct{})
	for job := range jobs {
		wg.Go(func() {
			<-start
			inst := pendingInstance("p", int64(job))
			err := s.CreateInstance(ctx, admit(inst, maxRunners))
			switch {
			case errors.Is(err, store.ErrPoolFull):
				mu.Lock()
				full++
				mu.Unlock()
				return
			case err != nil:
				fail(fmt.Errorf("create %d: %w", job, err))
				return
			}
			mu.Lock()
			created = append(created, inst)
			mu.Unlock()
			// Two workers claim the same instance at once.
			var claims sync.WaitGroup
			for range 2 {
				claims.Go(func() {
					next, err := inst.Transition(runner.StatusCreating, time.Now())
					if err != nil {
						fail(err)
						return
					}
					err = s.UpdateInstance(ctx, runner.StatusPendingCreate, next)
					var conflict *store.ConflictError
					switch {
					case err == nil:
						mu.Lock()
						winners[inst.Name]++
						mu.Unlock()
					case !errors.As(err, &conflict):
						fail(fmt.Errorf("claim %s: %w", inst.Name, err))
					}
				})
				claims.Go(func() {
					err := s.CreateJob(ctx, openJob("p", int64(job)+1, time.Now()))
					switch {
					case err == nil:
						mu.Lock()
						fresh[inst.Name]++
						mu.Unlock()
					case !errors.Is(err, store.ErrJobExists):
						fail(fmt.Errorf("create job %d: %w", job, err))
					}
				})
			}
			claims.Wait()
		})
	}
	close(start)
	wg.Wait()

	if len(failures) > 0 {
		t.Fatalf("unexpected errors: %v", failures)
	}
	if len(created) != maxRunners || full != jobs-maxRunners {
		t.Fatalf("%d created and %d refused as full, want %d and %d", len(created), full, maxRunners, jobs-maxRunners)
	}
	if n, err := s.PoolUsage(ctx, "p"); err != nil || n != maxRunners {
		t.Fatalf("PoolUsage = %d, %v; want %d", n, err, maxRunners)
	}
	for _, inst := range created {
		if winners[inst.Name] != 1 || fresh[inst.Name] != 1 {
			t.Fatalf("%s: %d claims won, %d job creates; want exactly one of each", inst.Name, winners[inst.Name], fresh[inst.Name])
		}
		got, err := s.GetInstance(ctx, inst.Name)
		if err != nil || got.Status != runner.StatusCreating || got.Version != 2 {
			t.Fatalf("%s after the race: %+v, %v; want creating at version 2", inst.Name, got, err)
		}
	}
	stats := s.CommitStats()
	t.Logf("commit stats: %+v", stats)
	// 64 creates + 80 claims + 80 job creates; those that found nothing to
	// write (pool full, lost claim, job recorded already) cost no commit at
	// all.
	if want := uint64(jobs + 4*maxRunners); stats.Calls != want {
		t.Fatalf("%d write calls counted, want %d", stats.Calls, want)
	}
	if stats.Writes != uint64(3*maxRunners) {
		t.Fatalf("%d writes committed, want %d (creates, winning claims, job creates)", stats.Writes, 3*maxRunners)
	}
	if stats.Commits >= stats.Writes {
		t.Fatalf("%d commits for %d concurrent writes: nothing was grouped", stats.Commits, stats.Writes)
	}
	if stats.Rollbacks != 0 {
		t.Fatalf("%d rollbacks: refusals should not make the others run again", stats.Rollbacks)
	}
}
