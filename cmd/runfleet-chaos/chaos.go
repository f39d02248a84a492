package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/runfleet/runfleet/internal/github/scaleset/scalesettest"
)

// finalReserve is what the deadline keeps back from settling, for the
// final reads and runfleet's graceful stop.
const finalReserve = time.Minute

// chaos runs the whole thing and returns its report. An error is a failure
// of the run itself (runfleet would not start, the driver broke), not a
// violation found.
func chaos(ctx context.Context, s settings, stderr io.Writer) (*report, error) {
	deadline, _ := ctx.Deadline()
	dir, err := outDir(s.out)
	if err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(dir, "driver.log"))
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	log := slog.New(slog.NewJSONHandler(logFile, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if s.replicas > 1 {
		fmt.Fprintf(stderr, "runfleet-chaos: seed %d, %d jobs over %s, %d replicas on PostgreSQL, %d kills, %d database restart(s); everything goes to %s\n", s.seed, s.jobs, s.arrival, s.replicas, s.kills, btoi(s.dbRestart), dir)
	} else {
		fmt.Fprintf(stderr, "runfleet-chaos: seed %d, %d jobs over %s, %d kills, an outage of %s; everything goes to %s\n", s.seed, s.jobs, s.arrival, s.kills, s.outage, dir)
	}

	if s.provider == "" {
		if s.provider, err = buildProvider(ctx, dir); err != nil {
			return nil, err
		}
	}
	if s.provider, err = filepath.Abs(s.provider); err != nil {
		return nil, err
	}

	secret, apiToken := randomHex(), randomHex()
	gh := startGitHub(s.apps)
	defer gh.close()
	if s.intake == intakeScaleSet {
		gh.actions = startActions(gh, scalesettest.Options{PollWindow: actionsPollWindow})
	}

	cl := cloudConfig(dir, s)
	providerConfig := filepath.Join(dir, "provider.json")
	if err := cl.Write(providerConfig); err != nil {
		return nil, err
	}
	p := newPlan(s)
	u := setup{s: s, dir: dir, gh: gh, secret: secret, apiToken: apiToken, providerConfig: providerConfig}
	var fl fleet
	if s.replicas > 1 {
		fl, err = startReplicaFleet(ctx, u, p.replicas)
	} else {
		fl, err = startSingleServer(ctx, u, p.kills)
	}
	if err != nil {
		return nil, err
	}
	rep := &report{settings: s, dir: dir, started: time.Now()}
	defer func() { _ = fl.stop() }()

	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	send := newSenders(gh.Server, fl, []byte(secret), 6*s.jobs+64, s.dupRate, s.seed)
	send.start(runCtx, s.senders)
	w := newWorld(log, gh, cl, send, p, s)
	start := time.Now()
	var bg sync.WaitGroup
	bg.Add(2)
	go func() { defer bg.Done(); w.run(runCtx, start) }()
	go func() { defer bg.Done(); showProgress(runCtx, stderr, start, w, send, fl) }()
	faultsCtx, faultsOff := context.WithCancel(runCtx)
	defer faultsOff()
	armed := make(chan map[string]int, 1)
	if gh.actions != nil && s.actionsFaults {
		go func() { armed <- armFaults(faultsCtx, gh.actions.Server, s.seed) }()
	} else {
		armed <- nil
	}

	// The chaos: jobs arrive on schedule while runfleet is killed at the
	// planned moments; faults stay on until the last restart is healthy
	// and the last job has been queued.
	done, err := fl.unleash(ctx, log, stderr, send, start)
	rep.kills, rep.dbRestart = done.kills, done.db
	if err != nil {
		return rep, err
	}
	if wait := s.arrival + tickEvery - time.Since(start); wait > 0 {
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
	rep.chaosEnded = time.Since(start)
	faultsOff()
	rep.actionsFaults = <-armed
	quiet := cl
	quiet.FailRate, quiet.HangRate = 0, 0
	if err := quiet.Write(providerConfig); err != nil {
		return rep, err
	}
	fmt.Fprintf(stderr, "runfleet-chaos: %s: faults off; settling\n", round(time.Since(start)))
	log.Info("faults off; settling")

	op := newOperator(fl.apiURL(), apiToken)
	settleCtx, cancelSettle := context.WithDeadline(ctx, deadline.Add(-finalReserve))
	rep.settled, rep.settleNote = settle(settleCtx, w, send, cl, op)
	cancelSettle()
	rep.settleEnded = time.Since(start)

	// Final reads while runfleet still runs, then a graceful stop.
	finalCtx, cancelFinal := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancelFinal()
	obs, obsErr := observe(finalCtx, w, send, gh, cl, op, fl.logs())
	if ft, ok := fl.(interface{ faultFigures() *faultFigures }); ok {
		rep.faults = ft.faultFigures()
	}
	stopRun()
	bg.Wait()
	send.wait()
	rep.stopErr = fl.stop()
	rep.crashes = fl.crashes()
	rep.logs = fl.logs()
	rep.elapsed = time.Since(start)
	if obsErr != nil {
		return rep, obsErr
	}
	if err := errors.Join(w.failure(), gh.t.Err()); err != nil {
		return rep, err
	}
	rep.obs = obs
	if gh.actions != nil {
		rep.relisten = relistenTimes(rep.kills, pollTimes(gh.actions.Calls()), time.Now())
	}
	rep.check()
	return rep, nil
}

// killOnSchedule kills runfleet with SIGKILL at each planned moment and
// restarts it on the same state after the planned downtime. Around the
// outage the senders resend nothing: from just before the kill until the
// restarted process is healthy.
func killOnSchedule(ctx context.Context, log *slog.Logger, stderr io.Writer, srv *server, send *senders, kills []kill, start time.Time) ([]killRecord, error) {
	var done []killRecord
	n := 0
	for _, k := range kills {
		select {
		case <-ctx.Done():
			return done, ctx.Err()
		case <-time.After(time.Until(start.Add(k.at))):
		}
		if k.outage {
			send.setOutage(true)
		}
		r, err := srv.kill()
		if err != nil {
			return done, err
		}
		rec := killRecord{at: time.Since(start), run: r.n, downtime: k.downtime, outage: k.outage}
		log.Info("runfleet killed", "run", r.n, "pid", r.proc.PID(), "downtime", k.downtime, "outage", k.outage)
		what := fmt.Sprintf("kill -9 #%d", n+1)
		if n++; k.outage {
			what = fmt.Sprintf("outage (kill -9 #%d; failed deliveries not resent)", n)
		}
		fmt.Fprintf(stderr, "runfleet-chaos: %s: %s (runfleet serve #%d, pid %d); restarting in %s\n", round(rec.at), what, r.n, r.proc.PID(), round(k.downtime))
		select {
		case <-ctx.Done():
			return done, ctx.Err()
		case <-time.After(k.downtime):
		}
		restarted := time.Now()
		rec.restartedAt = restarted
		_, err = srv.start(ctx)
		send.setOutage(false)
		if err != nil {
			return done, err
		}
		rec.restartTook = time.Since(restarted)
		done = append(done, rec)
	}
	return done, nil
}

type killRecord struct {
	at, downtime, restartTook time.Duration
	// restartedAt is when the new process was started.
	restartedAt time.Time
	run         int
	outage      bool
	replica     string // its name; "" with one server
}

// showProgress prints a line every ten seconds.
func showProgress(ctx context.Context, stderr io.Writer, start time.Time, w *world, send *senders, fl fleet) {
	t := time.NewTicker(10 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			p, st := w.progress(), send.snapshot()
			fmt.Fprintf(stderr, "runfleet-chaos: %s: jobs %d waiting to arrive, %d queued, %d running, %d done; %d machines; %d deliveries outstanding (%d attempts refused); %s\n",
				round(time.Since(start)), p.pending, p.queued, p.running, p.done, p.machinesLive, st.outstanding, st.refused, fl.status())
		}
	}
}

// outDir makes the run's directory. A given one must be empty: runfleet's
// store and the cloud's state left by an earlier run would be this run's
// starting state. It is searchable by others (mode 0711, not listable):
// run as root, PostgreSQL runs as the postgres user and keeps its data
// inside.
func outDir(out string) (string, error) {
	if out == "" {
		dir, err := os.MkdirTemp("", "runfleet-chaos-")
		if err != nil {
			return "", err
		}
		return dir, os.Chmod(dir, 0o711)
	}
	if err := os.MkdirAll(out, 0o711); err != nil {
		return "", err
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		return "", err
	}
	if len(entries) > 0 {
		return "", fmt.Errorf("-out %s is not empty (an earlier run's state would carry over): remove it or name another", out)
	}
	if err := os.Chmod(out, 0o711); err != nil {
		return "", err
	}
	return filepath.Abs(out)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// buildProvider builds the fake GARM provider
// (./providers/external/externaltest/fakeprovider) into dir; run from the
// repository root (as `make chaos` does), or pass -provider.
func buildProvider(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "chaos-provider")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./providers/external/externaltest/fakeprovider")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the fake provider (run from the repository root, or pass -provider): %v\n%s", err, out)
	}
	return bin, nil
}

func randomHex() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func round(d time.Duration) time.Duration { return d.Round(100 * time.Millisecond) }
