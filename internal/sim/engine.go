package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/runner"
)

// NewEngine builds the real engine over a process's ports, as serve does
// at start: the installation id is read from the store, and everything
// else comes from Deps. Runner bootstrap is on (instance tokens), so
// credentials writes are crash points too.
func NewEngine(ctx context.Context, d Deps) (Controller, error) {
	installation, err := d.Store.InstallationID(ctx)
	if err != nil {
		return nil, fmt.Errorf("read installation id: %w", err)
	}
	var deliveries *engine.DeliveryRecovery
	if log, ok := d.GitHub.(github.DeliveryLog); ok {
		deliveries = &engine.DeliveryRecovery{Logs: []engine.DeliverySource{engine.AppDeliveries(log)}, Parse: parseLogged}
	}
	e, err := engine.New(engine.Options{
		RegistrarOptions: engine.RegistrarOptions{
			LedgerOptions: engine.LedgerOptions{
				ControllerID:     d.ControllerID,
				InstallationID:   installation,
				Store:            d.Store,
				Queue:            d.Queue,
				Pools:            d.Pools,
				Logger:           d.Logger,
				Now:              d.Now,
				DeleteBackoffMin: d.BackoffMin,
				DeleteBackoffMax: d.BackoffMax,
			},
			GitHub: d.GitHub,
		},
		Deliveries:      deliveries,
		Providers:       d.Providers,
		Rand:            d.Rand,
		ProviderTimeout: d.ProviderTimeout,
		MetadataURL:     "http://runfleet.sim/metadata",
		CallbackURL:     "http://runfleet.sim/callback",
		InstanceToken: func(inst, _ string, attempt int, _ time.Duration) (string, error) {
			return fmt.Sprintf("token-%s-%d", inst, attempt), nil
		},
	})
	if err != nil {
		return nil, err
	}
	return engineController{e}, nil
}

type engineController struct{ e *engine.Engine }

func (c engineController) HandleJobEvent(ctx context.Context, ev runner.JobEvent, meta engine.EventMeta) (string, error) {
	out, err := c.e.HandleJobEvent(ctx, ev, meta)
	if out.Instance != "" {
		return out.Result + " " + out.Instance, err
	}
	return out.Result, err
}

// HandleMessage acknowledges done and malformed work, as serve's workers
// do.
func (c engineController) HandleMessage(ctx context.Context, id string, receive int, body []byte) (bool, error) {
	err := c.e.HandleMessage(engine.WithDelivery(ctx, id, receive), body)
	return err == nil || errors.Is(err, engine.ErrMalformed), err
}

func (c engineController) Reconcile(ctx context.Context) error {
	_, err := c.e.Reconcile(ctx)
	return err
}

func (c engineController) LeftInFlight(ctx context.Context) (func(context.Context) error, error) {
	r, err := c.e.LeftInFlight(ctx)
	if err != nil {
		return nil, err
	}
	return r.Run, nil
}

// TakeOverDeadWork is the scan of dead work a replica runs every 3 s.
func (c engineController) TakeOverDeadWork(ctx context.Context) (int, error) {
	return c.e.TakeOverDeadWork(ctx)
}

// Intake is the engine's intake port, which the scale-set listener feeds.
func (c engineController) Intake() engine.JobEventHandler { return c.e }

func (c engineController) ForceDelete(ctx context.Context, instance string) error {
	_, err := c.e.ForceDelete(ctx, instance)
	return err
}

// HandleInterruption is the worker's hand-over of an EventBridge spot
// warning, which names only the machine and carries its time.
func (c engineController) HandleInterruption(ctx context.Context, providerID string, warnedAt time.Time) (string, error) {
	return c.e.HandleInterruption(ctx, engine.InterruptionNotice{ProviderID: providerID, At: warnedAt, Since: warnedAt, Kind: runner.InterruptionSpot, Source: "eventbridge"})
}
