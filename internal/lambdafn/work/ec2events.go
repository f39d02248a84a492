package work

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/runner"
)

// The EventBridge rule SpotInterruptionRule sends EC2's events to the work
// queue as they are: the message body is the event itself, with none of
// runfleet's message fields.
const (
	ec2Source             = "aws.ec2"
	detailSpotWarning     = "EC2 Spot Instance Interruption Warning"
	detailRebalanceAdvice = "EC2 Instance Rebalance Recommendation"
)

// ec2Event is an EventBridge event from EC2, as AWS documents the two the
// rule matches.
type ec2Event struct {
	Version    string   `json:"version"`
	ID         string   `json:"id"`
	DetailType string   `json:"detail-type"`
	Source     string   `json:"source"`
	Account    string   `json:"account"`
	Time       string   `json:"time"`
	Region     string   `json:"region"`
	Resources  []string `json:"resources"`
	Detail     struct {
		InstanceID     string `json:"instance-id"`
		InstanceAction string `json:"instance-action"`
	} `json:"detail"`
}

// isEventBridgeEvent tells an EventBridge event from a runfleet message
// without decoding either: only an event has a detail-type.
func isEventBridgeEvent(body []byte) bool {
	return bytes.Contains(body, []byte(`"detail-type"`))
}

// decodeInterruption reads an EC2 event into the engine's notice. An event
// that can never be acted on (not EC2's, a detail-type the rule does not
// match, no instance id) is an error matching engine.ErrMalformed. The
// event's time is kept when it parses; AWS's documented examples carry a
// placeholder there, which counts as "now" for the mark and as an unknown
// interruption start (every failure on the machine is then re-run).
func decodeInterruption(body []byte) (engine.InterruptionNotice, ec2Event, error) {
	var ev ec2Event
	if err := json.Unmarshal(body, &ev); err != nil {
		return engine.InterruptionNotice{}, ev, fmt.Errorf("%w: EventBridge event: %v", engine.ErrMalformed, err)
	}
	n := engine.InterruptionNotice{ProviderID: ev.Detail.InstanceID, Source: "eventbridge"}
	switch {
	case ev.Source != ec2Source:
		return n, ev, fmt.Errorf("%w: EventBridge event from %q, want %s", engine.ErrMalformed, ev.Source, ec2Source)
	case ev.DetailType == detailSpotWarning:
		n.Kind = runner.InterruptionSpot
	case ev.DetailType == detailRebalanceAdvice:
		n.Kind = runner.InterruptionRebalance
	default:
		return n, ev, fmt.Errorf("%w: EC2 event %q is not one runfleet acts on", engine.ErrMalformed, ev.DetailType)
	}
	if n.ProviderID == "" {
		return n, ev, fmt.Errorf("%w: %s without detail.instance-id", engine.ErrMalformed, ev.DetailType)
	}
	if at, err := time.Parse(time.RFC3339, ev.Time); err == nil {
		// The warning's time is also the interruption's start: a job that
		// completed before it failed on its own (engine: interruptedRun).
		n.At, n.Since = at, at
	}
	return n, ev, nil
}

// handleEC2Event hands an interruption warning or rebalance recommendation
// to the engine. A malformed event is logged once and acknowledged; one
// for a machine that is not this stack's is ignored by the engine, with a
// log line.
func handleEC2Event(ctx context.Context, log *slog.Logger, eng *engine.Engine, body []byte) recordOutcome {
	n, ev, err := decodeInterruption(body)
	log = log.With("event_id", ev.ID, "detail_type", ev.DetailType, "provider_id", ev.Detail.InstanceID, "account", ev.Account, "region", ev.Region)
	if err != nil {
		log.ErrorContext(ctx, "EventBridge event not acted on", "error", err, "body_bytes", len(body))
		return recordMalformed
	}
	result, err := eng.HandleInterruption(ctx, n)
	if err != nil {
		log.WarnContext(ctx, "interruption not handled; message will be retried", "error", err)
		return recordFailed
	}
	log.InfoContext(ctx, "EC2 interruption event handled", "result", result, "instance_action", ev.Detail.InstanceAction)
	return recordDone
}
