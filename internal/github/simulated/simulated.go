// Package simulated is an in-process SIMULATION of GitHub's self-hosted
// runner API, implementing github.GitHub for demos and engine tests. It
// keeps registered runners in memory and lets a test steer what GitHub
// would do: mark runners busy or online, set what a workflow job's state is,
// fail the next call, impose a rate limit, and count every call (a job's
// cost in rate-limit budget). It never talks to GitHub.
package simulated

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/runfleet/runfleet/internal/github"
)

// Op names a GitHub port operation, for counters and injected failures.
type Op string

// The operations of github.GitHub.
const (
	OpGenerateJITConfig Op = "GenerateJITConfig"
	OpRemoveRunner      Op = "RemoveRunner"
	OpListRunners       Op = "ListRunners"
	OpRunnerDownloads   Op = "RunnerDownloads"
	OpGetJob            Op = "GetJob"
)

// Runner statuses as GitHub reports them.
const (
	StatusOnline  = "online"
	StatusOffline = "offline"
)

var errNoOwner = errors.New("simulated 404: the request names no owner")

// maxLabels is GitHub's limit on a JIT runner's labels.
const maxLabels = 100

var _ github.GitHub = (*GitHub)(nil)

// GitHub is the simulation. The zero value is not usable; call New. It is
// safe for concurrent use.
type GitHub struct {
	mu             sync.Mutex
	now            func() time.Time
	lastID         int64
	runners        runnerIndex
	jobs           jobBook
	calls          map[Op]int
	injected       map[Op][]injectedFailure
	rateLimitUntil time.Time
}

// RegisteredRunner is a runner registered at an owner.
type RegisteredRunner struct {
	Owner github.Owner
	github.Runner
}

type injectedFailure struct {
	err error
	// afterEffect: the call takes effect and still fails, as GitHub
	// sometimes creates a runner yet answers with an error.
	afterEffect bool
}

// New returns an empty simulated GitHub.
func New() *GitHub {
	return &GitHub{
		now:      time.Now,
		runners:  newRunnerIndex(),
		jobs:     newJobBook(),
		calls:    make(map[Op]int),
		injected: make(map[Op][]injectedFailure),
	}
}

// GenerateJITConfig registers an offline JIT runner. A name already taken
// at the owner returns an error that is github.ErrRunnerNameTaken (GitHub's
// 409).
func (g *GitHub) GenerateJITConfig(ctx context.Context, req github.JITRequest) (*github.JITConfig, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	inj, err := g.beginLocked(OpGenerateJITConfig)
	if err != nil {
		return nil, err
	}
	if err := validateJIT(req); err != nil {
		return nil, err
	}
	if r := g.runners.find(req.Owner, req.Name); r != nil {
		return nil, fmt.Errorf("%w: simulated 409: a runner named %q already exists at %s", github.ErrRunnerNameTaken, req.Name, req.Owner)
	}
	g.lastID++
	r := &RegisteredRunner{
		Owner: req.Owner,
		Runner: github.Runner{
			ID:     g.lastID,
			Name:   req.Name,
			Status: StatusOffline,
			Labels: slices.Clone(req.Labels),
		},
	}
	if busyOnRegistration(req.Labels) {
		r.Status, r.Busy = StatusOnline, true
	}
	g.runners.add(r)
	if inj != nil {
		return nil, inj.err
	}
	return &github.JITConfig{RunnerID: r.ID, EncodedJITConfig: encodeJIT(r)}, nil
}

func validateJIT(req github.JITRequest) error {
	switch {
	case req.Owner.Org == "" && req.Owner.Enterprise == "":
		return errNoOwner
	case req.Name == "":
		return errors.New("simulated 422: JIT request has no runner name")
	case len(req.Labels) == 0 || len(req.Labels) > maxLabels:
		return fmt.Errorf("simulated 422: a JIT runner needs 1–%d labels, got %d", maxLabels, len(req.Labels))
	}
	return nil
}

// RemoveRunner deregisters a runner by id, else by name, at the ref's owner.
// A runner that is not there is success; a busy one returns an error that is
// github.ErrRunnerBusy (GitHub's 422).
func (g *GitHub) RemoveRunner(ctx context.Context, ref github.RunnerRef) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	inj, err := g.beginLocked(OpRemoveRunner)
	if err != nil {
		return err
	}
	if ref.ID == 0 && ref.Name == "" {
		return errors.New("simulated 404: runner reference has neither id nor name")
	}
	var r *RegisteredRunner
	if ref.ID != 0 {
		if found, ok := g.runners.byID[ref.ID]; ok && sameOwner(found.Owner, ref.Owner) {
			r = found
		}
	} else {
		r = g.runners.find(ref.Owner, ref.Name)
	}
	if r != nil {
		if r.Busy {
			return fmt.Errorf("%w: simulated 422: runner %q is still running a job", github.ErrRunnerBusy, r.Name)
		}
		g.runners.remove(r)
	}
	if inj != nil {
		return inj.err
	}
	return nil
}

// ListRunners returns the runners registered at owner, by id.
func (g *GitHub) ListRunners(ctx context.Context, owner github.Owner) ([]github.Runner, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	inj, err := g.beginLocked(OpListRunners)
	if err != nil {
		return nil, err
	}
	var out []github.Runner
	for _, r := range g.runners.ownedBy(owner) {
		out = append(out, copyRunner(r.Runner))
	}
	if inj != nil {
		return nil, inj.err
	}
	return out, nil
}

// beginLocked counts a call and applies the rate limit and injected
// failures. It returns the failure to report after the call takes effect,
// if one was injected that way.
func (g *GitHub) beginLocked(op Op) (*injectedFailure, error) {
	g.calls[op]++
	if now := g.now(); now.Before(g.rateLimitUntil) {
		return nil, &github.RateLimitError{RetryAt: g.rateLimitUntil, Message: "simulated rate limit"}
	}
	queue := g.injected[op]
	if len(queue) == 0 {
		return nil, nil
	}
	next := queue[0]
	g.injected[op] = queue[1:]
	if next.afterEffect {
		return &next, nil
	}
	return nil, next.err
}

// sameOwner compares where runners register, ignoring case (GitHub logins
// are case-insensitive) and the installation used to authenticate.
func sameOwner(a, b github.Owner) bool {
	return strings.EqualFold(a.Org, b.Org) &&
		strings.EqualFold(a.Repo, b.Repo) &&
		strings.EqualFold(a.Enterprise, b.Enterprise)
}

func copyRunner(r github.Runner) github.Runner {
	r.Labels = slices.Clone(r.Labels)
	return r
}
