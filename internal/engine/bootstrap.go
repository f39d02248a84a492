package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// Runner bootstrap: what a booting machine may ask of the control plane with
// its instance token (fetch its JIT credentials, report progress), and what
// the worker prepares for it before asking the provider for the machine.
// The token names one instance and one create attempt; every request is
// checked against the stored instance, and every status write is a
// compare-and-set, so a token outlives nothing it should not: not a retried
// create, not a deleted instance, not a runner that is already up.

// BootstrapMargin is added to a pool's bootstrap timeout to get the life of
// an instance token and of the stored credentials: the machine may start
// fetching late in the window, and must still finish.
const BootstrapMargin = 5 * time.Minute

// BootstrapTTL is how long a create attempt's token and credentials live.
func BootstrapTTL(pool *runner.Pool) time.Duration {
	return pool.BootstrapTimeout + BootstrapMargin
}

// maxReportedMessage caps the machine's message kept as a fault: it is
// free text from outside, shown to operators.
const maxReportedMessage = 512

// BootstrapClaim is who a booting machine is, as its verified instance
// token says.
type BootstrapClaim struct {
	Instance string
	Pool     string
	Attempt  int
}

// ErrBootstrapRefused is matched by every *BootstrapRefusedError.
var ErrBootstrapRefused = errors.New("engine: bootstrap request refused")

// BootstrapRefusedError is a bootstrap request the instance's state does
// not allow. Reason is safe to show the machine and to log.
type BootstrapRefusedError struct {
	Instance string
	Reason   string
	// Conflict marks a request that the token still allows but that makes
	// no sense now (an HTTP 409); otherwise the token is no longer accepted
	// for this instance (403).
	Conflict bool
}

func (e *BootstrapRefusedError) Error() string {
	return fmt.Sprintf("engine: bootstrap request for instance %q refused: %s", e.Instance, e.Reason)
}

// Is makes errors.Is(err, ErrBootstrapRefused) true.
func (e *BootstrapRefusedError) Is(target error) bool { return target == ErrBootstrapRefused }

func refuse(name, format string, args ...any) error {
	return &BootstrapRefusedError{Instance: name, Reason: fmt.Sprintf(format, args...)}
}

// bootstrapStatuses are the instance statuses in which a machine may be
// booting: still being created (a machine can call back before the
// provider's create returns), running, or unknown to the provider for a
// moment. Anything else — not yet claimed, failed, being deleted — means
// the machine must not get credentials or move the runner.
var bootstrapStatuses = map[runner.Status]bool{
	runner.StatusCreating: true,
	runner.StatusRunning:  true,
	runner.StatusUnknown:  true,
}

// checkBootstrap applies the acceptance rule to the stored instance: live,
// in a booting status, on the token's create attempt and pool, and its
// runner still pending or installing.
func checkBootstrap(inst *runner.Instance, c BootstrapClaim) error {
	switch {
	case !inst.Status.Live():
		return refuse(c.Instance, "the instance is deleted")
	case inst.Pool != c.Pool:
		return refuse(c.Instance, "the token names pool %q, the instance is in pool %q", c.Pool, inst.Pool)
	case inst.CreateAttempt != c.Attempt:
		return refuse(c.Instance, "the token is for create attempt %d, the instance is on attempt %d", c.Attempt, inst.CreateAttempt)
	case !bootstrapStatuses[inst.Status]:
		return refuse(c.Instance, "the instance is %s", inst.Status)
	case inst.RunnerStatus != runner.RunnerPending && inst.RunnerStatus != runner.RunnerInstalling:
		return refuse(c.Instance, "the runner is %s; its bootstrap is over", inst.RunnerStatus)
	}
	return nil
}

// AuthorizeBootstrap returns the instance a verified token names if the
// token is still accepted for it, else a *BootstrapRefusedError.
func (lg *Ledger) AuthorizeBootstrap(ctx context.Context, c BootstrapClaim) (*runner.Instance, error) {
	inst, err := lg.store.GetInstance(ctx, c.Instance)
	if errors.Is(err, store.ErrNotFound) {
		return nil, refuse(c.Instance, "there is no such instance")
	}
	if err != nil {
		return nil, fmt.Errorf("read instance %s: %w", c.Instance, err)
	}
	if err := checkBootstrap(inst, c); err != nil {
		return nil, err
	}
	return inst, nil
}

// RunnerCredentials returns the encoded JIT configuration stored for the
// token's create attempt. It is a secret: callers hand it to the machine
// and nowhere else. No stored credentials (or only another attempt's) is
// store.ErrCredentialsNotFound.
func (lg *Ledger) RunnerCredentials(ctx context.Context, c BootstrapClaim) (string, error) {
	if _, err := lg.AuthorizeBootstrap(ctx, c); err != nil {
		return "", err
	}
	rc, err := lg.store.GetRunnerCredentials(ctx, c.Instance)
	if err != nil {
		return "", err
	}
	if rc.CreateAttempt != c.Attempt {
		return "", fmt.Errorf("credentials of %s are for create attempt %d, not %d: %w", c.Instance, rc.CreateAttempt, c.Attempt, store.ErrCredentialsNotFound)
	}
	return rc.EncodedJITConfig, nil
}

// ReportStatus is what a booting machine says of its runner in a status
// callback (GARM's callback values) — its own vocabulary, kept apart from
// the instance and runner statuses it moves.
type ReportStatus string

// The runner statuses a booting machine reports.
const (
	ReportInstalling ReportStatus = "installing"
	ReportIdle       ReportStatus = "idle"
	ReportFailed     ReportStatus = "failed"
)

// RunnerReport is one status callback from a booting machine.
type RunnerReport struct {
	Status  ReportStatus
	Message string
	// AgentID is the GitHub runner id the machine reports; 0 when none.
	AgentID int64
}

// ReportRunnerStatus applies a booting machine's status callback:
//
//	installing  runner pending -> installing (no write when already installing)
//	idle        runner -> idle, the GitHub runner id recorded if unknown; the
//	            credentials are deleted: the runner is configured, and the
//	            token is no longer accepted
//	failed      instance -> pending_delete with the message as its fault,
//	            runner -> failed, delete enqueued; credentials deleted
//
// Each is a compare-and-set that re-checks the acceptance rule on the
// instance it replaces. It returns the instance as written (or as read,
// when nothing needed writing).
func (lg *Ledger) ReportRunnerStatus(ctx context.Context, c BootstrapClaim, r RunnerReport) (*runner.Instance, error) {
	log := lg.log.With("instance", c.Instance, "create_attempt", c.Attempt, "reported_status", r.Status)
	message := truncate(r.Message, maxReportedMessage)
	var decide func(cur *runner.Instance) (*runner.Instance, error)
	switch r.Status {
	case ReportInstalling:
		decide = func(cur *runner.Instance) (*runner.Instance, error) {
			if err := checkBootstrap(cur, c); err != nil {
				return nil, err
			}
			if cur.RunnerStatus == runner.RunnerInstalling {
				return nil, errNoChange
			}
			return lg.withRunnerStatus(cur, runner.RunnerInstalling), nil
		}
	case ReportIdle:
		decide = func(cur *runner.Instance) (*runner.Instance, error) {
			if err := checkBootstrap(cur, c); err != nil {
				return nil, err
			}
			next := lg.withRunnerStatus(cur, runner.RunnerIdle)
			switch {
			case r.AgentID > 0 && next.GitHubRunnerID == 0:
				next.GitHubRunnerID = r.AgentID
			case r.AgentID > 0 && next.GitHubRunnerID != r.AgentID:
				log.Warn("machine reports another runner id than GitHub registered; keeping GitHub's",
					"agent_id", r.AgentID, "github_runner_id", next.GitHubRunnerID)
			}
			return next, nil
		}
	case ReportFailed:
		decide = func(cur *runner.Instance) (*runner.Instance, error) {
			if err := checkBootstrap(cur, c); err != nil {
				return nil, err
			}
			next, err := cur.Transition(runner.StatusPendingDelete, lg.now())
			if err != nil {
				return nil, &BootstrapRefusedError{Instance: c.Instance, Reason: err.Error(), Conflict: true}
			}
			next.RunnerStatus = runner.RunnerFailed
			next.ProviderFault = "runner bootstrap failed: " + message
			return next, nil
		}
	default:
		return nil, &BootstrapRefusedError{Instance: c.Instance, Conflict: true,
			Reason: fmt.Sprintf("status %q is not one of %s, %s, %s", r.Status, ReportInstalling, ReportIdle, ReportFailed)}
	}

	next, wrote, err := lg.mutate(ctx, c.Instance, decide)
	if errors.Is(err, store.ErrNotFound) {
		return nil, refuse(c.Instance, "there is no such instance")
	}
	if err != nil {
		return nil, err
	}
	if !wrote {
		log.Debug("runner status report needed no write", "message", message)
		return next, nil
	}
	log.Info("runner reported its status", "runner_status", next.RunnerStatus, "status", next.Status, "message", message)
	if r.Status == ReportIdle || r.Status == ReportFailed {
		lg.forgetCredentials(ctx, log, c.Instance)
	}
	if r.Status == ReportIdle {
		lg.jobWaited(next, StageOnline)
	}
	if r.Status == ReportFailed {
		if err := lg.send(ctx, deleteMessage(next, EventMeta{}, next.Attempts), 0); err != nil {
			// The instance is pending_delete already; the reconciler
			// re-sends deletes whose message was lost.
			return next, fmt.Errorf("enqueue delete for %s: %w", c.Instance, err)
		}
		log.Warn("runner bootstrap failed; instance scheduled for delete", "fault", next.ProviderFault)
	}
	return next, nil
}

func (lg *Ledger) withRunnerStatus(cur *runner.Instance, rs runner.RunnerStatus) *runner.Instance {
	next := cur.Clone()
	next.RunnerStatus = rs
	next.UpdatedAt = lg.now()
	return next
}

// forgetCredentials deletes an instance's stored credentials. A failure is
// only logged: they expire with the token anyway.
func (lg *Ledger) forgetCredentials(ctx context.Context, log *slog.Logger, name string) {
	if err := lg.store.DeleteRunnerCredentials(ctx, name); err != nil {
		log.Warn("deleting the runner credentials failed; they expire by themselves", "error", err)
	}
}

// prepareBootstrap is what a create does between registering the JIT
// runner and asking the provider for the machine, when instance tokens are
// on: keep the JIT configuration where the machine will fetch it (never in
// the create request or user data), and mint the token that lets it. The
// returned URLs name the instance, so a token presented for another
// instance's URL is refused. With tokens off it returns zero values and
// stores nothing: no machine could fetch the credentials.
func (e *Engine) prepareBootstrap(ctx context.Context, inst *runner.Instance, pool *runner.Pool, jit *github.JITConfig) (bootstrap, error) {
	if e.opts.InstanceToken == nil {
		return bootstrap{}, nil
	}
	ttl := BootstrapTTL(pool)
	if err := e.store.PutRunnerCredentials(ctx, store.RunnerCredentials{
		Instance: inst.Name, CreateAttempt: inst.CreateAttempt, EncodedJITConfig: jit.EncodedJITConfig,
	}, ttl); err != nil {
		return bootstrap{}, fmt.Errorf("store runner credentials: %w", err)
	}
	tok, err := e.opts.InstanceToken(inst.Name, inst.Pool, inst.CreateAttempt, ttl)
	if err != nil {
		return bootstrap{}, fmt.Errorf("mint instance token: %w", err)
	}
	return bootstrap{
		token:       tok,
		metadataURL: InstanceURL(e.opts.MetadataURL, inst.Name),
		callbackURL: InstanceURL(e.opts.CallbackURL, inst.Name),
	}, nil
}

// bootstrap is what a provider's create request carries for the machine.
type bootstrap struct {
	token, metadataURL, callbackURL string
}

// InstanceURL is base with the instance name appended as one path segment
// ("" when base is ""): the per-instance metadata or callback URL.
func InstanceURL(base, instance string) string {
	if base == "" {
		return ""
	}
	return strings.TrimRight(base, "/") + "/" + url.PathEscape(instance)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Cut on a rune boundary so the fault stays valid UTF-8.
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
