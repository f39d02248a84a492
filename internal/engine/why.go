package engine

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// Timeline is what the store knows about one job, for `runfleet why`: the
// answer first (DecideWhy), then the ledger record of each run attempt and
// every instance made for it. The ledger keeps each record's current
// status and when it was entered, not every status it passed through; a
// job's deliveries are not kept either, only the one that recorded it
// (Job.Delivery). The timeline says so rather than guess.
type Timeline struct {
	JobID     int64              `json:"job_id"`
	Answer    WhyAnswer          `json:"answer"`
	Attempts  []*runner.Job      `json:"attempts"`
	Instances []*runner.Instance `json:"instances"`
	// Pool, MaxRunners and Usage are the latest attempt's pool as
	// configured and counted now.
	Pool       string    `json:"pool,omitempty"`
	MaxRunners int       `json:"max_runners,omitempty"`
	Usage      int       `json:"usage,omitempty"`
	At         time.Time `json:"at"`
	// Warm, for a pool with a queue-time target, says whether the latest
	// attempt waited past it because the forecast missed (WarmMiss).
	Warm *WarmMiss `json:"warm,omitempty"`
}

// maxWhyAttempts bounds the run attempts looked up for a job id: GitHub
// gives a re-run job a new id, so one id rarely has more than one.
const maxWhyAttempts = 5

// Why assembles job id's timeline from the store. A job runfleet never
// heard of is a timeline with no attempts and the answer saying what to
// check, not an error. The ledger does not run the reconciler, so its
// answer leaves out when a stale create is taken over; Engine.Why says it.
func (lg *Ledger) Why(ctx context.Context, jobID int64) (*Timeline, error) {
	return lg.why(ctx, jobID, nil)
}

// Why is the ledger's Why with the moment the reconciler takes over a
// create whose worker stopped (creatingTakeover).
func (e *Engine) Why(ctx context.Context, jobID int64) (*Timeline, error) {
	return e.why(ctx, jobID, e.creatingTakeover)
}

// WhyWithin is Why for an asker that knows the reconciler's bound without
// running it (the Lambda operator function): an instance of any pool may
// stay creating for takeover (Options.CreatingTakeover) before its create
// is taken over.
func (lg *Ledger) WhyWithin(ctx context.Context, jobID int64, takeover time.Duration) (*Timeline, error) {
	return lg.why(ctx, jobID, func(string) time.Duration { return takeover })
}

// why is Why; takeover, when set, is how long an instance of a pool may
// stay creating before the reconciler takes its create over.
func (lg *Ledger) why(ctx context.Context, jobID int64, takeover func(pool string) time.Duration) (*Timeline, error) {
	tl := &Timeline{JobID: jobID, At: lg.now(), Attempts: []*runner.Job{}, Instances: []*runner.Instance{}}
	for attempt := int64(1); attempt <= maxWhyAttempts; attempt++ {
		job, err := lg.store.GetJob(ctx, runner.JobKey(jobID, attempt))
		if errors.Is(err, store.ErrJobNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read job %s: %w", runner.JobKey(jobID, attempt), err)
		}
		tl.Attempts = append(tl.Attempts, job)
	}
	facts := WhyFacts{JobID: jobID, Now: tl.At}
	for _, job := range tl.Attempts {
		made, err := lg.instancesMadeFor(ctx, job)
		if err != nil {
			return nil, err
		}
		tl.Instances = append(tl.Instances, made...)
		facts.Job, facts.Instances = job, made
	}
	if facts.Job != nil && facts.Job.Pool != "" {
		tl.Pool = facts.Job.Pool
		if p, ok := lg.pool(tl.Pool); ok {
			usage, err := lg.store.PoolUsage(ctx, tl.Pool)
			if err != nil {
				return nil, fmt.Errorf("read pool %s usage: %w", tl.Pool, err)
			}
			facts.Pool = runner.PoolSlots{Configured: true, MaxRunners: p.MaxRunners, Held: usage}
			tl.MaxRunners, tl.Usage = p.MaxRunners, usage
			if takeover != nil {
				facts.CreatingTakeover = takeover(tl.Pool)
			}
			if tl.Warm, err = lg.warmMiss(ctx, p, facts.Job, tl.At); err != nil {
				return nil, err
			}
		}
	}
	tl.Answer = DecideWhy(facts)
	return tl, nil
}

// instancesMadeFor reads every instance named for job (InstanceFor 1 to
// Made), whatever its status; one whose deleted record has expired is
// left out.
func (lg *Ledger) instancesMadeFor(ctx context.Context, job *runner.Job) ([]*runner.Instance, error) {
	var out []*runner.Instance
	for n := 1; n <= job.Made; n++ {
		inst, err := lg.store.GetInstance(ctx, job.InstanceFor(n))
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read instance %s: %w", job.InstanceFor(n), err)
		}
		out = append(out, inst)
	}
	return out, nil
}

// ParseJobRef reads a job as an operator gives it: its id, or its URL on
// GitHub (…/actions/runs/RUN/job/JOB).
func ParseJobRef(ref string) (int64, error) {
	ref = strings.TrimSpace(ref)
	if id, err := strconv.ParseInt(ref, 10, 64); err == nil && id > 0 {
		return id, nil
	}
	u, err := url.Parse(ref)
	if err == nil && u.Host != "" {
		parts := strings.Split(strings.Trim(u.Path, "/"), "/")
		if i := slices.IndexFunc(parts, func(p string) bool { return p == "job" || p == "jobs" }); i >= 0 && i+1 < len(parts) {
			if id, err := strconv.ParseInt(parts[i+1], 10, 64); err == nil && id > 0 {
				return id, nil
			}
		}
	}
	return 0, fmt.Errorf("%q is neither a job id nor a GitHub job URL (https://github.com/OWNER/REPO/actions/runs/RUN/job/JOB)", ref)
}
