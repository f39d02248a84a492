// Package providers is the port to compute providers: whatever makes and
// destroys the machines runners run on. The operations are GARM's, so GARM's
// external provider binaries fit (providers/external), beside native ones
// (providers/ec2) and an in-process one for tests and demos
// (providers/simulated).
package providers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

// Provider makes and removes machines. instance arguments are the provider's
// id when known, otherwise the instance name: every provider must accept
// either (GARM's contract).
type Provider interface {
	// CreateInstance starts a machine for the runner. A returned Instance with
	// Status error is a failed create, the same as an error.
	CreateInstance(ctx context.Context, req CreateRequest) (Instance, error)
	// DeleteInstance removes the machine. A machine that is already gone is
	// success (nil), never an error.
	DeleteInstance(ctx context.Context, instance string) error
	// GetInstance returns ErrNotFound when the machine does not exist.
	GetInstance(ctx context.Context, instance string) (Instance, error)
	// ListInstances returns the machines of one pool, by its provider-side
	// id (runner.PoolID: unique per runfleet installation and pool), never
	// by its bare name: two installations may both have a pool "linux".
	ListInstances(ctx context.Context, poolID string) ([]Instance, error)
	// RemoveAllInstances removes every machine this controller made.
	RemoveAllInstances(ctx context.Context) error
	StartInstance(ctx context.Context, instance string) error
	StopInstance(ctx context.Context, instance string) error
}

// CreateRequest is what a provider needs to boot one runner machine (GARM's
// BootstrapInstance, in runfleet's words).
type CreateRequest struct {
	Name string
	// Pool is the pool's name (for logs and tags a person reads); PoolID
	// is its provider-side identity (GARM_POOL_ID, the tag ListInstances
	// selects by), unique per runfleet installation and pool.
	Pool        string
	PoolID      string
	Labels      []string
	RunnerGroup string
	// RepoURL is the GitHub URL the runner registers at.
	RepoURL string
	// MetadataURL, CallbackURL and InstanceToken let the booting machine fetch
	// its JIT credentials and report progress; credentials never travel in
	// the create request itself.
	MetadataURL      string
	CallbackURL      string
	InstanceToken    string
	JITConfigEnabled bool
	// RunnerDownloads are the runner builds GitHub offers the owner (every OS and
	// architecture; the provider picks its machine's). Empty when GitHub
	// could not be asked: a provider that needs them must say so.
	RunnerDownloads []RunnerDownload

	OSType     string
	Arch       string
	Flavor     string
	Image      string
	ExtraSpecs json.RawMessage

	// Shape is the machine the job asked for with shape labels, as its
	// pool's policy granted it; nil = the pool's own machine. Only pools
	// whose provider chooses machines by shape may grant shapes (config
	// allows pools[].shapes for ec2 and simulated, which ignores it), so
	// a provider with one flavor per pool never receives one.
	Shape *Shape
	// OnDemandOnly: the pool's spot breaker is open (repeated spot
	// interruptions); a provider that can buy spot capacity must not.
	OnDemandOnly bool
}

// InterruptionLister is implemented by a provider that can tell which of a
// pool's machines it is taking back (EC2: spot instances terminated for a
// spot interruption). `runfleet serve`, which receives no EventBridge
// events, polls it on every reconcile pass. The machines it returns may be
// gone already (terminated); they are reported so their jobs can be
// re-run, never to be deleted again.
type InterruptionLister interface {
	ListInterrupted(ctx context.Context, poolID string) ([]Instance, error)
}

// Shape is a granted machine shape (the domain's runner.Machine: the
// job's shape labels resolved under its pool's policy): the cheapest
// machine with at least MinCPU vCPUs and MinMemoryGiB of memory, at most
// MaxCPU and MaxMemoryGiB, from Families (cheapest first); DiskGiB 0 and
// Image "" mean the pool's; Market "" the pool's choice.
type Shape = runner.Machine

// Markets a Shape may ask for.
const (
	MarketSpot     = runner.MarketSpot
	MarketOnDemand = runner.MarketOnDemand
)

// RunnerDownload is one downloadable build of the runner application (GARM's
// RunnerApplicationDownload; GitHub's names for OS and Architecture: linux,
// win, osx; x64, arm, arm64).
type RunnerDownload struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	DownloadURL  string `json:"download_url"`
	Filename     string `json:"filename"`
	// SHA256Checksum may be empty (older GitHub Enterprise Server).
	SHA256Checksum string `json:"sha256_checksum,omitempty"`
	// TempDownloadToken is a short-lived bearer token some GitHub
	// Enterprise Server downloads require: a secret, never log it.
	TempDownloadToken string `json:"temp_download_token,omitempty"`
}

// MachineStatus is a machine's state as its provider reports it (GARM's
// vocabulary) — not an instance's status, nor its runner's.
type MachineStatus string

// Machine statuses a provider may report.
const (
	StatusRunning MachineStatus = "running"
	StatusStopped MachineStatus = "stopped"
	StatusError   MachineStatus = "error"
	StatusUnknown MachineStatus = "unknown"
)

// Instance is a machine as the provider reports it.
type Instance struct {
	ProviderID string        `json:"provider_id"`
	Name       string        `json:"name"`
	Status     MachineStatus `json:"status"`
	OSType     string        `json:"os_type,omitempty"`
	OSName     string        `json:"os_name,omitempty"`
	OSVersion  string        `json:"os_version,omitempty"`
	OSArch     string        `json:"os_arch,omitempty"`
	Addresses  []Address     `json:"addresses,omitempty"`
	// Fault is the provider's explanation when Status is error.
	Fault string `json:"provider_fault,omitempty"`
	// MachineType and Market name what the machine is, for its price (EC2:
	// the instance type, MarketSpot or MarketOnDemand). Empty when the
	// provider does not say (GARM's external providers): the pool's price
	// in config (pools[].cost.usd_per_hour) prices it then.
	MachineType string `json:"machine_type,omitempty"`
	Market      string `json:"market,omitempty"`
	// TakenBackAt, on a machine ListInterrupted returns, is when the
	// provider took it back (EC2: its spot termination); zero when the
	// provider does not say.
	TakenBackAt time.Time `json:"taken_back_at,omitzero"`
}

// Address is one network address of a machine.
type Address struct {
	Address string `json:"address"`
	Type    string `json:"type"` // public or private
}

// ErrNotFound reports a machine the provider does not have.
var ErrNotFound = errors.New("provider: instance not found")

// ErrWrongPool is a create or list naming a pool other than the one the
// provider was built for. Such a call is refused rather than obeyed: the
// provider's deletes by name look only in its own pool, so a machine it
// made for another pool could never be found again.
var ErrWrongPool = errors.New("provider: the call names a pool this provider does not serve")

// CheckPool returns nil when requested is served, the provider-side pool
// id a provider was built for; otherwise an *Error for op wrapping
// ErrWrongPool (an empty requested id included: a caller that forgot the
// id must not get the machines of whatever pool a default would pick).
func CheckPool(op, served, requested string) error {
	if requested == served {
		return nil
	}
	fault := fmt.Sprintf("the call is for pool id %q, this provider serves pool id %q", requested, served)
	if requested == "" {
		fault = fmt.Sprintf("the call names no pool id; this provider serves pool id %q", served)
	}
	return &Error{Op: op, Instance: requested, Fault: fault, Err: ErrWrongPool}
}

// Operation names, as GARM's provider protocol names them: Error.Op of
// every provider's errors, one spelling for all of them.
const (
	OpCreate    = "CreateInstance"
	OpDelete    = "DeleteInstance"
	OpGet       = "GetInstance"
	OpList      = "ListInstances"
	OpRemoveAll = "RemoveAllInstances"
	OpStart     = "StartInstance"
	OpStop      = "StopInstance"
)

// Error is a failed provider call, with the provider's own explanation
// (stored on the instance so an operator can read it).
type Error struct {
	Op       string // CreateInstance, DeleteInstance, …
	Instance string
	Fault    string
	Err      error
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("provider %s %s failed", e.Op, e.Instance)
	if e.Fault != "" {
		msg += ": " + e.Fault
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Fault returns the text to record on an instance for err.
func Fault(err error) string {
	var pe *Error
	if errors.As(err, &pe) && pe.Fault != "" {
		return pe.Fault
	}
	if err == nil {
		return ""
	}
	return err.Error()
}

// WarmPool is implemented by providers that keep pre-made, stopped
// machines a create starts instead of launching one. The engine's
// reconcile pass calls RefillWarm once per pool whose provider implements
// it. Warm machines are no runner's: ListInstances never reports them, so
// they are neither orphans nor counted against max_runners.
type WarmPool interface {
	// RefillWarm replaces warm machines that can no longer serve (an older
	// image, a failed preparation) and launches the shortfall. pool is the
	// pool's name (for tags and logs), poolID its provider-side id.
	RefillWarm(ctx context.Context, pool, poolID string) (WarmRefill, error)
}

// WarmSizer is implemented by a WarmPool whose size the engine may set
// each pass: a pool with a queue-time target (pools[].warm) keeps the
// stopped machines its forecast asks for. The provider's own configured
// size stays the floor.
type WarmSizer interface {
	// RefillWarmTo is RefillWarm to at least size stopped machines: the
	// larger of size and the configured one.
	RefillWarmTo(ctx context.Context, pool, poolID string, size int) (WarmRefill, error)
}

// WarmRefill is what one RefillWarm did.
type WarmRefill struct {
	Launched int // new warm machines
	Replaced int // warm machines terminated because they could not serve
	Ready    int // stopped warm machines left ready to start
}

// FailoverNotifier is implemented by a provider that moves a create on to
// other capacity (EC2: the next subnet, instance type or on-demand) and can
// say so, for runfleet_capacity_failovers_total. Wiring calls it once,
// before the provider is used; f must not block.
type FailoverNotifier interface {
	NotifyFailovers(f func(pool, reason string))
}

// PriceReader is implemented by a provider that can read the price of its
// machines from its cloud (EC2: the Price List API for on-demand, the spot
// price history for spot). The engine asks it
// only for a machine the configured price table does not price, through
// a cache (internal/cost): prices change by the hour, not by the call.
type PriceReader interface {
	// HourlyPriceUSD returns the price of one machine of machineType in
	// market, in US dollars per hour, or an error saying why there is none.
	HourlyPriceUSD(ctx context.Context, machineType, market string) (float64, error)
}

// Unwrapper is a provider that decorates another (metrics, test
// recorders); As looks through it.
type Unwrapper interface {
	Unwrap() Provider
}

// As returns the first provider in p's chain of decorators (p itself,
// then what each Unwrap returns) that implements T. The engine finds a
// provider's optional abilities (WarmPool, InterruptionLister) with it: a
// plain type assertion on a decorated provider would silently find none.
func As[T any](p Provider) (T, bool) {
	for p != nil {
		if t, ok := p.(T); ok {
			return t, true
		}
		u, ok := p.(Unwrapper)
		if !ok {
			break
		}
		p = u.Unwrap()
	}
	var zero T
	return zero, false
}
