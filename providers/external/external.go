// Package external runs GARM external provider binaries, unchanged, as
// runfleet providers: each call execs the binary once per GARM's protocol
// (interface v0.1.0, or v0.1.1's extra environment) with a clean
// environment, and checks everything it answers. The wire types and
// constants are GARM's own (garm-provider-common), so the two cannot drift.
package external

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/cloudbase/garm-provider-common/execution/common"
	"github.com/runfleet/runfleet/providers"
)

// Type is the provider type name in config (pools[].provider.type).
const Type = "external"

// defaultCreateTimeout bounds a CreateInstance whose context has no
// deadline (GARM's default bootstrap timeout): a hung provider must never
// hold a create forever.
const defaultCreateTimeout = 20 * time.Minute

// Options are what a provider needs besides its pool's settings.
type Options struct {
	// ControllerID is GARM_CONTROLLER_ID: config controller_id.
	ControllerID string
	// PoolID is the provider-side id of the one pool this provider serves
	// (runner.PoolID: unique per runfleet installation and pool), never
	// the pool's name. CreateInstance and ListInstances send their own
	// pool id and must name this one; interface v0.1.1 also sends
	// GARM_POOL_ID with DeleteInstance, GetInstance, StartInstance and
	// StopInstance, which carry no pool, and this is the id they send.
	PoolID string
	// Environ returns the host environment variables passed through are
	// taken from; nil means os.Environ.
	Environ func() []string
	// Logger receives a debug line per call (with the provider's stderr)
	// and a warning per kill; nil means slog.Default().
	Logger *slog.Logger
}

// Provider is one pool's external provider. It is safe for concurrent use:
// every call is its own process (on Linux, one that dies with runfleet:
// see runPinned).
type Provider struct {
	settings     Settings
	controllerID string
	poolID       string
	environ      func() []string
	log          *slog.Logger
}

var _ providers.Provider = (*Provider)(nil)

// New returns a provider running s.Executable. s comes from ParseSettings,
// which checks the files exist.
func New(s Settings, o Options) (*Provider, error) {
	switch {
	case s.Executable == "" || s.ConfigFile == "":
		return nil, errors.New("external provider: settings need provider_executable and config_file")
	case o.ControllerID == "":
		return nil, errors.New("external provider: a controller ID is required (GARM_CONTROLLER_ID)")
	case o.PoolID == "":
		return nil, errors.New("external provider: the pool's provider-side ID is required (GARM_POOL_ID)")
	}
	if s.InterfaceVersion == "" {
		s.InterfaceVersion = common.Version010
	}
	if s.Timeout <= 0 {
		s.Timeout = DefaultTimeout
	}
	p := &Provider{settings: s, controllerID: o.ControllerID, poolID: o.PoolID, environ: o.Environ, log: o.Logger}
	if p.environ == nil {
		p.environ = os.Environ
	}
	if p.log == nil {
		p.log = slog.Default()
	}
	p.log = p.log.With("provider", Type, "executable", s.Executable)
	return p, nil
}

// CreateInstance runs CreateInstance with the request as a BootstrapInstance
// on stdin, bounded only by ctx (the engine bounds it by the pool's
// bootstrap timeout); req.PoolID, which must be this provider's, is its
// GARM_POOL_ID. An answer with status error is returned as such, with its
// decoded provider_fault, and no error. When the answer is invalid but
// names a machine, that machine is returned with the error so the caller
// can delete it.
func (p *Provider) CreateInstance(ctx context.Context, req providers.CreateRequest) (providers.Instance, error) {
	c := call{command: common.CreateInstanceCommand, instance: req.Name, poolID: req.PoolID, extraSpecs: p.extraSpecs(req)}
	if req.Name == "" {
		return providers.Instance{}, &providers.Error{Op: string(c.command), Err: errors.New("an instance name is required")}
	}
	if err := providers.CheckPool(string(c.command), p.poolID, req.PoolID); err != nil {
		return providers.Instance{}, err
	}
	stdin, err := json.Marshal(p.bootstrap(req, c.poolID))
	if err != nil {
		return providers.Instance{}, &providers.Error{Op: string(c.command), Instance: req.Name, Err: fmt.Errorf("encode bootstrap params: %w", err)}
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultCreateTimeout)
		defer cancel()
	}
	stdout, err := p.run(ctx, c, stdin)
	if err != nil {
		return providers.Instance{}, err
	}
	in, err := decodeInstance(stdout)
	if err != nil {
		return in, outputError(c, req.Name, err)
	}
	return in, nil
}

// DeleteInstance runs DeleteInstance for instance (a provider id, or the
// name when no id is known). Exit 30, not found, is success.
func (p *Provider) DeleteInstance(ctx context.Context, instance string) error {
	_, err := p.runInstance(ctx, common.DeleteInstanceCommand, instance)
	if errors.Is(err, providers.ErrNotFound) {
		return nil
	}
	return err
}

// GetInstance runs GetInstance; exit 30 is providers.ErrNotFound.
func (p *Provider) GetInstance(ctx context.Context, instance string) (providers.Instance, error) {
	stdout, err := p.runInstance(ctx, common.GetInstanceCommand, instance)
	if err != nil {
		return providers.Instance{}, err
	}
	in, err := decodeInstance(stdout)
	if err != nil {
		return providers.Instance{}, outputError(call{command: common.GetInstanceCommand}, instance, err)
	}
	return in, nil
}

// ListInstances runs ListInstances with poolID, which must be this
// provider's, as GARM_POOL_ID. `null` is no instances; empty output is an
// error.
func (p *Provider) ListInstances(ctx context.Context, poolID string) ([]providers.Instance, error) {
	c := call{command: common.ListInstancesCommand, poolID: poolID, extraSpecs: p.settings.ExtraSpecs}
	if err := providers.CheckPool(string(c.command), p.poolID, poolID); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, p.settings.Timeout)
	defer cancel()
	stdout, err := p.run(ctx, c, nil)
	if err != nil {
		return nil, err
	}
	list, err := decodeInstances(stdout)
	if err != nil {
		return nil, outputError(c, c.poolID, err)
	}
	return list, nil
}

// RemoveAllInstances runs RemoveAllInstances: the provider removes every
// machine of this controller, in every pool (GARM_POOL_ID, sent only by
// v0.1.1, is this provider's pool).
func (p *Provider) RemoveAllInstances(ctx context.Context) error {
	_, err := p.runPlain(ctx, common.RemoveAllInstancesCommand)
	return err
}

// StartInstance runs StartInstance.
func (p *Provider) StartInstance(ctx context.Context, instance string) error {
	_, err := p.runInstance(ctx, common.StartInstanceCommand, instance)
	return err
}

// StopInstance runs StopInstance.
func (p *Provider) StopInstance(ctx context.Context, instance string) error {
	_, err := p.runInstance(ctx, common.StopInstanceCommand, instance)
	return err
}

// GetVersion runs GetVersion and returns what the provider printed.
func (p *Provider) GetVersion(ctx context.Context) (string, error) {
	stdout, err := p.runPlain(ctx, common.GetVersionCommand)
	return strings.TrimSpace(string(stdout)), err
}

// runInstance runs a command about one instance under the call timeout.
func (p *Provider) runInstance(ctx context.Context, command common.ExecutionCommand, instance string) ([]byte, error) {
	if instance == "" {
		return nil, &providers.Error{Op: string(command), Err: errors.New("an instance (provider id or name) is required")}
	}
	ctx, cancel := context.WithTimeout(ctx, p.settings.Timeout)
	defer cancel()
	return p.run(ctx, call{command: command, instance: instance, poolID: p.poolID, extraSpecs: p.settings.ExtraSpecs}, nil)
}

// runPlain runs a command about no instance under the call timeout.
func (p *Provider) runPlain(ctx context.Context, command common.ExecutionCommand) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, p.settings.Timeout)
	defer cancel()
	return p.run(ctx, call{command: command, poolID: p.poolID, extraSpecs: p.settings.ExtraSpecs}, nil)
}

// outputError turns a decoding problem into the provider error callers
// record: the problem is the fault, ErrInvalidOutput the cause.
func outputError(c call, subject string, err error) error {
	return &providers.Error{Op: string(c.command), Instance: subject, Fault: err.Error(), Err: ErrInvalidOutput}
}
