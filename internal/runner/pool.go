package runner

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"time"
)

// Pool is a policy: which jobs a set of runners serves (owner and labels),
// how many may exist (max_runners, min_idle) and how long each step may take.
// It is the domain's view of a configured pool; internal/config's YAML pool
// is turned into it at the edge (internal/wiring), so use cases never see
// the config format.
type Pool struct {
	Name string
	// ID is the pool's identity at providers (GARM_POOL_ID, machine tags):
	// unique per runfleet installation and pool, stable across restarts
	// (PoolID). Two installations with a pool of the same name on one cloud
	// account never see each other's machines.
	ID string
	// Owner is where the pool's runners register (configured as "org",
	// "org/repo" or "enterprise:slug").
	Owner       Owner
	Labels      []string
	MinIdle     int
	MaxRunners  int
	RunnerGroup string
	// BootstrapTimeout bounds a provider create and how long a runner may
	// take to come online.
	BootstrapTimeout time.Duration
	// ProviderTimeout bounds every other provider call (delete, list).
	ProviderTimeout time.Duration
	// Shapes is what a job of the pool may ask for with shape labels
	// (runfleet/cpu=4 …); nil refuses every shape label.
	Shapes *ShapePolicy
	// SpotBreaker turns spot off for the pool after repeated
	// interruptions; the zero value is the defaults.
	SpotBreaker SpotBreakerPolicy
	// Warm, when set, sizes the pool's warm runners from its job ledger
	// (internal/warm); MinIdle is then the floor. Nil: MinIdle alone.
	Warm *WarmPolicy
	// ScaleSet is the runner scale set that feeds the pool (its name), or
	// "" for a pool fed by webhooks. A scale-set pool's jobs reach the
	// ledger named by its listener (JobEvent.Pool), never matched by
	// labels: see Pools.Match.
	ScaleSet string
}

// WarmPolicy is a pool's queue-time target: Percentile percent of the
// week's jobs start within Target, with at most MaxIdle warm machines.
type WarmPolicy struct {
	Target     time.Duration
	Percentile float64
	MaxIdle    int
}

// selfHosted is the label GitHub gives every self-hosted runner.
const selfHosted = "self-hosted"

// ServesOwner reports whether the pool registers runners where a job of
// this repository ("org/repo"), organization or enterprise can use them.
func (p *Pool) ServesOwner(repoFullName, orgLogin, enterpriseSlug string) bool {
	owner := p.Owner
	switch {
	case owner.IsZero():
		return false
	case owner.Enterprise != "":
		return enterpriseSlug != "" && strings.EqualFold(owner.Enterprise, enterpriseSlug)
	case owner.Repo != "":
		return strings.EqualFold(owner.Org+"/"+owner.Repo, repoFullName)
	default:
		return orgLogin != "" && strings.EqualFold(owner.Org, orgLogin)
	}
}

// Matches reports whether the pool's runners can run a job with these
// labels: GitHub gives a job to a runner whose labels cover all of the
// job's, case-insensitively, and every self-hosted runner has
// "self-hosted". A job with no labels matches nothing. Shape labels
// (runfleet/…) are left out: they neither keep a job from its pool nor
// lead it to another — the pool is decided by the other labels, and its
// ShapePolicy then grants or refuses the shape. A job with only shape
// labels matches nothing.
func (p *Pool) Matches(jobLabels []string) bool {
	matched := false
	for _, want := range jobLabels {
		if IsShapeLabel(want) {
			continue
		}
		if !p.hasLabel(want) {
			return false
		}
		matched = true
	}
	return matched
}

func (p *Pool) hasLabel(label string) bool {
	if strings.EqualFold(label, selfHosted) {
		return true
	}
	for _, have := range p.Labels {
		if strings.EqualFold(have, label) {
			return true
		}
	}
	return false
}

// RunnerLabels are the labels a pool's runners register with:
// "self-hosted" first, as GitHub gives every self-hosted runner, then the
// pool's own, then the controller's ownership label (a job matches runners
// whose labels cover its own, so an extra label never keeps a job away).
func (p *Pool) RunnerLabels(controllerID string) []string {
	labels := []string{selfHosted}
	for _, l := range p.Labels {
		if !strings.EqualFold(l, selfHosted) {
			labels = append(labels, l)
		}
	}
	if own := ControllerLabel(controllerID); own != "" {
		labels = append(labels, own)
	}
	return labels
}

// JobRunnerLabels are the labels of a runner made for a job: the pool's
// (RunnerLabels) and the job's shape labels. GitHub gives a job only to a
// runner that has all of its labels, so a shaped job's runner must carry
// them. (An unshaped job of the pool may still be given a shaped runner:
// its labels cover the job's. The shaped job then gets a replacement, as
// for any runner taken by another job.)
func (p *Pool) JobRunnerLabels(controllerID string, jobLabels []string) []string {
	return append(p.RunnerLabels(controllerID), ShapeLabels(jobLabels)...)
}

// Pools is the ordered list of pools; the first matching pool serves a job.
type Pools []Pool

// Match returns the first pool fed by webhooks that serves the owner and
// covers the labels.
func (ps Pools) Match(repoFullName, orgLogin, enterpriseSlug string, jobLabels []string) (*Pool, bool) {
	for i := range ps {
		p := &ps[i]
		if p.ScaleSet != "" {
			// GitHub also sends webhooks for a scale set's jobs, keyed by
			// the REST job id; matching one would open a second demand for
			// a job the listener already holds under its runner request.
			continue
		}
		if p.ServesOwner(repoFullName, orgLogin, enterpriseSlug) && p.Matches(jobLabels) {
			return p, true
		}
	}
	return nil, false
}

// Get returns the pool by name.
func (ps Pools) Get(name string) (*Pool, bool) {
	for i := range ps {
		if ps[i].Name == name {
			return &ps[i], true
		}
	}
	return nil, false
}

// PoolID is the stable provider-side identity of a pool of the runfleet
// installation whose id is installationID (kept in the store, see
// store.Store.InstallationID). It has the shape of a UUID because GARM's
// providers receive pool ids as UUIDs; it is derived, not stored, so every
// process of one installation computes the same id.
func PoolID(installationID, pool string) string {
	sum := sha256.Sum256([]byte("runfleet-pool\x00" + installationID + "\x00" + pool))
	b := sum[:16]
	b[6] = b[6]&0x0f | 0x80 // version 8: vendor-defined (RFC 9562)
	b[8] = b[8]&0x3f | 0x80 // RFC 9562 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
