package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"
)

// dbRecord is what the database restart did.
type dbRecord struct {
	at, downtime, restartTook time.Duration
}

// unleash kills replicas as planned — the planned victim if it is up,
// else another, never the last one up — and restarts each after its
// downtime, concurrently with what follows; and crashes and restarts the
// database once. It returns when every restart is done.
func (f *replicaFleet) unleash(ctx context.Context, log *slog.Logger, stderr io.Writer, _ *senders, start time.Time) (chaosDone, error) {
	var (
		mu       sync.Mutex
		done     chaosDone
		errs     []error
		restarts sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, err)
	}
	dbDone := f.plan.db == nil
	for i := 0; i < len(f.plan.kills) || !dbDone; {
		if !dbDone && (i == len(f.plan.kills) || f.plan.db.at <= f.plan.kills[i].at) {
			dbDone = true
			rec, err := f.restartDatabase(ctx, log, stderr, *f.plan.db, start)
			mu.Lock()
			done.db = rec
			mu.Unlock()
			if err != nil {
				fail(err)
				break
			}
			continue
		}
		k := f.plan.kills[i]
		i++
		if err := sleepUntil(ctx, start.Add(k.at)); err != nil {
			fail(err)
			break
		}
		victim, err := f.waitForVictim(ctx, k.replica)
		if err != nil {
			fail(err)
			break
		}
		srv := f.replicas[victim]
		r, err := srv.kill()
		if err != nil {
			fail(fmt.Errorf("replica %s: %w", f.names[victim], err))
			break
		}
		killedAt := time.Now()
		rec := &killRecord{at: time.Since(start), run: r.n, downtime: k.downtime, replica: f.names[victim]}
		mu.Lock()
		done.kills = append(done.kills, *rec)
		n := len(done.kills)
		mu.Unlock()
		log.Info("replica killed", "replica", rec.replica, "run", r.n, "pid", r.proc.PID(), "downtime", k.downtime)
		what, pid := fmt.Sprintf("kill -9 #%d (replica %s, run #%d)", n, rec.replica, r.n), r.proc.PID()
		go f.track.killed(ctx, what, pid, killedAt)
		fmt.Fprintf(stderr, "runfleet-chaos: %s: kill -9 #%d: replica %s (run #%d, pid %d); restarting in %s\n", round(rec.at), n, rec.replica, r.n, r.proc.PID(), round(k.downtime))
		restarts.Add(1)
		go func() {
			defer restarts.Done()
			took, err := f.restartReplica(ctx, victim, k.downtime)
			if err != nil {
				fail(err)
				return
			}
			mu.Lock()
			done.kills[n-1].restartTook = took
			mu.Unlock()
		}()
	}
	restarts.Wait()
	return done, errors.Join(errs...)
}

// waitForVictim marks the replica to kill now as down (see
// chooseVictim), waiting while fewer than two are up.
func (f *replicaFleet) waitForVictim(ctx context.Context, planned int) (int, error) {
	for {
		f.mu.Lock()
		victim, ok := chooseVictim(planned, f.up)
		if ok {
			f.up[victim], f.killedAt[victim] = false, f.now()
		}
		f.mu.Unlock()
		if ok {
			return victim, nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// restartReplica starts replica i again after downtime, once the
// database is up, and puts it back among those up when it is healthy.
func (f *replicaFleet) restartReplica(ctx context.Context, i int, downtime time.Duration) (time.Duration, error) {
	if err := sleepUntil(ctx, time.Now().Add(downtime)); err != nil {
		return 0, err
	}
	f.dbGate.RLock()
	defer f.dbGate.RUnlock()
	began := time.Now()
	if _, err := f.replicas[i].start(ctx); err != nil {
		return 0, fmt.Errorf("replica %s: %w", f.names[i], err)
	}
	f.setUp(i, true)
	return time.Since(began), nil
}

// restartDatabase crashes the database at its planned moment (no replica
// is starting then) and starts it again after the downtime. The replicas
// run on: their connections break and their calls fail meanwhile.
func (f *replicaFleet) restartDatabase(ctx context.Context, log *slog.Logger, stderr io.Writer, p dbRestart, start time.Time) (*dbRecord, error) {
	if err := sleepUntil(ctx, start.Add(p.at)); err != nil {
		return nil, err
	}
	f.dbGate.Lock()
	defer f.dbGate.Unlock()
	rec := &dbRecord{at: time.Since(start), downtime: p.downtime}
	crashedAt := time.Now()
	f.db.kill()
	log.Info("database killed (immediate shutdown)", "downtime", p.downtime)
	fmt.Fprintf(stderr, "runfleet-chaos: %s: PostgreSQL crashed (immediate shutdown); restarting in %s\n", round(rec.at), round(p.downtime))
	if err := sleepUntil(ctx, time.Now().Add(p.downtime)); err != nil {
		return rec, err
	}
	began := time.Now()
	if err := f.db.restart(); err != nil {
		return rec, err
	}
	rec.restartTook = time.Since(began)
	go f.track.dbRestarted(ctx, crashedAt)
	log.Info("database restarted", "took", rec.restartTook)
	return rec, nil
}

func sleepUntil(ctx context.Context, t time.Time) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(t)):
		return nil
	}
}

var _ fleet = (*replicaFleet)(nil)
