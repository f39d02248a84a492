// Package engine holds runfleet's use cases: what happens on each
// workflow_job webhook, how workers create and delete instances, force
// delete for operators, and reconciliation. It depends only on ports.
package engine

import (
	"context"
	"log/slog"
	"time"

	"github.com/runfleet/runfleet/events"
	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/queue"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/providers"
)

// Options are the engine's dependencies and tunables.
type Options struct {
	Store  store.Store
	Queue  queue.Queue
	GitHub github.GitHub
	// Providers maps each pool name to its provider.
	Providers map[string]providers.Provider
	Pools     []config.Pool
	Logger    *slog.Logger
	// Now defaults to time.Now.
	Now func() time.Time

	DeleteBackoffMin  time.Duration // default 1s
	DeleteBackoffMax  time.Duration // default 5m
	MaxCreateAttempts int           // default 3
	// MetadataURL and CallbackURL are handed to providers for runner bootstrap.
	MetadataURL string
	CallbackURL string
	// InstanceToken mints the token a booting machine uses against the
	// metadata endpoints; nil means no token is issued.
	InstanceToken func(inst string, createAttempt int, ttl time.Duration) (string, error)
}

// Outcome says what the engine did with one webhook.
type Outcome struct {
	Action   string `json:"action"`
	Result   string `json:"result"`
	Instance string `json:"instance,omitempty"`
	Pool     string `json:"pool,omitempty"`
}

// Results an Outcome can carry.
const (
	ResultCreated          = "instance_created"
	ResultDuplicate        = "duplicate"
	ResultNoMatchingPool   = "no_matching_pool"
	ResultAwaitingCapacity = "awaiting_capacity"
	ResultBound            = "runner_bound"
	ResultDeleteScheduled  = "delete_scheduled"
	ResultRecorded         = "recorded"
	ResultIgnored          = "ignored"
)

// WorkflowJobHandler is what webhook intake needs from the engine.
type WorkflowJobHandler interface {
	OnWorkflowJob(ctx context.Context, deliveryID string, ev *events.WorkflowJobEvent) (Outcome, error)
}
