package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// DeliveryRecovery is what the reconcile pass needs to recover webhook
// deliveries GitHub failed to make: GitHub never redelivers on its own, so
// a queued event that found runfleet down or slow leaves its job without a
// runner until someone redelivers it by hand.
//
// Each pass reads the App's delivery log from the position the last pass
// stored, newest first, and stops at that position: one list call when
// nothing happened. Every workflow_job delivery with no successful
// attempt is fetched (one call) and handed to the intake with its GUID as
// the delivery id, exactly as if the webhook had arrived. The intake's job
// ledger makes that idempotent: the same delivery arriving by webhook too,
// or recovered twice, makes no second runner.
type DeliveryRecovery struct {
	// Logs are the delivery logs of the webhooks that send runfleet its
	// events — the App's, or organizations' and repositories' webhooks —
	// each read from its own stored position. At least one.
	Logs []DeliverySource
	// Parse turns a recovered delivery into a job event with the parser
	// the webhook intake uses (webhook.ParseRecovered). Required: the
	// engine never reads GitHub's payload itself.
	Parse func(event string, payload []byte) (runner.JobEvent, error)
	// Lookback is how far back the first pass (no stored position) reads;
	// default DefaultDeliveryLookback.
	Lookback time.Duration
	// MaxPages bounds the list calls of one pass (100 deliveries each);
	// default DefaultDeliveryMaxPages.
	MaxPages int
	// Settle is how long an attempt stays above the stored position, read
	// again each pass, in case GitHub logs an older attempt after a newer
	// one (a 10 s timeout is logged after a fast answer that began later);
	// default DefaultDeliverySettle.
	Settle time.Duration
}

// DeliverySource is one webhook's delivery log and the name of the store
// cursor that keeps how far it was read.
type DeliverySource struct {
	Cursor string
	Log    github.DeliveryLog
}

// AppDeliveries is the App webhook's delivery log, under its cursor.
func AppDeliveries(log github.DeliveryLog) DeliverySource {
	return DeliverySource{Cursor: DeliveryCursorName, Log: log}
}

// HookDeliveries is an organization's or repository's webhook's delivery
// log, under a cursor named after the hook.
func HookDeliveries(h github.Hook, log github.DeliveryLog) DeliverySource {
	return DeliverySource{Cursor: "github." + h.String() + ".deliveries", Log: log}
}

// Defaults of DeliveryRecovery, and the name of the App log's cursor.
const (
	DefaultDeliveryLookback = time.Hour
	DefaultDeliveryMaxPages = 10
	DefaultDeliverySettle   = 2 * time.Minute
	DeliveryCursorName      = "github.app.hook.deliveries"
)

// withDefaults checks r and fills in its defaults.
func (r DeliveryRecovery) withDefaults() (*DeliveryRecovery, error) {
	if len(r.Logs) == 0 || r.Parse == nil {
		return nil, errors.New("engine: delivery recovery needs a delivery log and a parser")
	}
	seen := map[string]bool{}
	for _, src := range r.Logs {
		if src.Log == nil || src.Cursor == "" || seen[src.Cursor] {
			return nil, fmt.Errorf("engine: delivery log %q: want a log and a cursor name of its own", src.Cursor)
		}
		seen[src.Cursor] = true
	}
	if r.Lookback <= 0 {
		r.Lookback = DefaultDeliveryLookback
	}
	if r.MaxPages <= 0 {
		r.MaxPages = DefaultDeliveryMaxPages
	}
	if r.Settle <= 0 {
		r.Settle = DefaultDeliverySettle
	}
	return &r, nil
}

// deliveryPosition is the stored cursor's value: every attempt up to
// After is dealt with; Handled names the deliveries above it (inside the
// settle window) already recovered or given up, by GUID, with the newest
// attempt id seen, so a pass re-reading the window does not fetch them
// again.
type deliveryPosition struct {
	After   int64            `json:"after"`
	Handled map[string]int64 `json:"handled,omitempty"`
}

// recoverDeliveries is the reconcile pass's step for lost deliveries: each
// log in turn, one log's failure never stopping another's. Its errors are
// reported with the pass's, never stopping the rest of it.
func (e *Engine) recoverDeliveries(ctx context.Context, rep *ReconcileReport) error {
	if e.deliveries == nil {
		return nil
	}
	var errs []error
	for _, src := range e.deliveries.Logs {
		if err := e.recoverDeliveriesFrom(ctx, src, rep); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", src.Cursor, err))
		}
	}
	return errors.Join(errs...)
}

// recoverDeliveriesFrom reads one webhook's log from its stored position
// and recovers what it lost.
func (e *Engine) recoverDeliveriesFrom(ctx context.Context, src DeliverySource, rep *ReconcileReport) error {
	r := e.deliveries
	cur, err := e.store.GetCursor(ctx, src.Cursor)
	if err != nil {
		return fmt.Errorf("read the delivery log cursor: %w", err)
	}
	pos := e.readPosition(cur)
	now := e.now()
	attempts, err := e.scanDeliveries(ctx, src, pos, now)
	if err != nil {
		return fmt.Errorf("read the webhook delivery log: %w", err)
	}
	var errs []error
	// retry is the oldest attempt of the oldest lost delivery to try again
	// next pass: the position stays below every attempt of it, and of
	// every lost delivery after it, so the next pass reads them all again.
	var retry int64
	for _, l := range lostDeliveries(attempts, pos) {
		a := l.newest
		if err := e.recoverDelivery(ctx, src.Log, a, rep); err != nil {
			errs = append(errs, err)
			if retry == 0 || l.oldest < retry {
				retry = l.oldest
			}
			if _, limited := errors.AsType[*github.RateLimitError](err); limited {
				break // every further fetch would be refused too; the next pass resumes here
			}
			continue
		}
		pos.Handled[a.GUID] = a.ID
	}
	next := pos.advance(attempts, now.Add(-r.Settle), retry)
	errs = append(errs, e.saveDeliveryPosition(ctx, cur, next))
	return errors.Join(errs...)
}

// readPosition decodes the stored position; one that does not decode is
// logged and read as none, so the pass falls back to the lookback.
func (e *Engine) readPosition(cur *store.Cursor) deliveryPosition {
	pos := deliveryPosition{Handled: map[string]int64{}}
	if cur.Value == "" {
		return pos
	}
	if err := json.Unmarshal([]byte(cur.Value), &pos); err != nil {
		e.log.Warn("delivery log cursor does not decode; reading the lookback window instead", "error", err)
		return deliveryPosition{Handled: map[string]int64{}}
	}
	if pos.Handled == nil {
		pos.Handled = map[string]int64{}
	}
	return pos
}

// scanDeliveries lists the attempts newer than pos (or, with none stored,
// than the lookback), newest first, in at most MaxPages calls. Reaching
// the limit skips the older attempts for good — the cost stays bounded,
// and the warning says what was not checked.
func (e *Engine) scanDeliveries(ctx context.Context, src DeliverySource, pos deliveryPosition, now time.Time) ([]github.Delivery, error) {
	r := e.deliveries
	cutoff := now.Add(-r.Lookback)
	var out []github.Delivery
	cursor := ""
	for range r.MaxPages {
		page, next, err := src.Log.ListDeliveries(ctx, cursor)
		if err != nil {
			return nil, err
		}
		for _, d := range page {
			if pos.After > 0 && d.ID <= pos.After || pos.After == 0 && d.DeliveredAt.Before(cutoff) {
				return out, nil
			}
			out = append(out, d)
		}
		if next == "" {
			return out, nil
		}
		cursor = next
	}
	e.log.Warn("more webhook deliveries since the last reconcile pass than its page limit; older ones were not checked for loss",
		"log", src.Cursor, "pages", r.MaxPages, "after", pos.After, "oldest_checked", out[len(out)-1].ID)
	return out, nil
}

// lostDelivery is one delivery no attempt made: its newest attempt (all
// carry the same payload) and the id of its oldest, which is where a pass
// that could not recover it must read from again.
type lostDelivery struct {
	newest    github.Delivery
	oldest    int64
	delivered bool
}

// lostDeliveries picks, among attempts, the workflow_job deliveries no
// attempt delivered (grouped by GUID: a redelivery shares it) and not
// handled already, oldest delivery first, so a job's events reach the
// intake in the order GitHub sent them.
func lostDeliveries(attempts []github.Delivery, pos deliveryPosition) []lostDelivery {
	groups := map[string]*lostDelivery{}
	for _, a := range attempts {
		if a.Event != github.EventWorkflowJob || a.GUID == "" {
			continue
		}
		g := groups[a.GUID]
		if g == nil {
			g = &lostDelivery{newest: a, oldest: a.ID}
			groups[a.GUID] = g
		}
		g.delivered = g.delivered || a.Delivered()
		if a.ID > g.newest.ID {
			g.newest = a
		}
		g.oldest = min(g.oldest, a.ID)
	}
	var lost []*lostDelivery
	for guid, g := range groups {
		if _, done := pos.Handled[guid]; !done && !g.delivered {
			lost = append(lost, g)
		}
	}
	slices.SortFunc(lost, func(a, b *lostDelivery) int { return cmp.Compare(a.oldest, b.oldest) })
	out := make([]lostDelivery, len(lost))
	for i, g := range lost {
		out[i] = *g
	}
	return out
}

// recoverDelivery fetches one lost delivery and hands it to the intake.
// A delivery that cannot be recovered (gone from the log, a payload the
// intake refuses) is counted and logged, not retried: nil. A failure worth
// retrying next pass (GitHub or the store unavailable) is the error.
func (e *Engine) recoverDelivery(ctx context.Context, from github.DeliveryLog, a github.Delivery, rep *ReconcileReport) error {
	log := e.log.With("delivery_id", a.GUID, "github_delivery_id", a.ID, "action", a.Action, "status_code", a.StatusCode)
	d, err := from.GetDelivery(ctx, a.ID)
	if errors.Is(err, github.ErrDeliveryNotFound) {
		rep.DeliveriesUnrecoverable++
		log.Warn("lost webhook delivery is no longer in GitHub's log; not recovered", "error", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("fetch lost delivery %d (%s): %w", a.ID, a.GUID, err)
	}
	ev, err := e.deliveries.Parse(d.Event, d.Payload)
	if err != nil {
		rep.DeliveriesUnrecoverable++
		log.Error("lost webhook delivery has a payload the intake refuses; not recovered", "error", err)
		return nil
	}
	log = log.With("job_id", ev.JobID)
	out, err := e.HandleJobEvent(ctx, ev, EventMeta{Source: SourceDeliveryLog, Key: a.GUID})
	if err != nil {
		log.Warn("recovered webhook delivery failed in the intake; retrying next pass", "error", err)
		return fmt.Errorf("intake of recovered delivery %s (job %d): %w", a.GUID, ev.JobID, err)
	}
	rep.DeliveriesRecovered++
	log.Info("lost webhook delivery recovered from GitHub's delivery log",
		"pool", out.Pool, "result", out.Result, "instance", out.Instance)
	return nil
}

// advance is the position after a pass: past every attempt older than
// settled, but not past an attempt logged later than settled (GitHub may
// still log older ids) nor past a delivery to retry; never backwards.
// Handled keeps only what stays above the new position.
func (p deliveryPosition) advance(attempts []github.Delivery, settled time.Time, retry int64) deliveryPosition {
	after, unsettled := p.After, int64(0)
	for _, a := range attempts {
		switch {
		case a.DeliveredAt.After(settled):
			if unsettled == 0 || a.ID < unsettled {
				unsettled = a.ID
			}
		case a.ID > after:
			after = a.ID
		}
	}
	for _, hold := range []int64{unsettled, retry} {
		if hold > 0 && hold <= after {
			after = hold - 1
		}
	}
	next := deliveryPosition{After: max(after, p.After), Handled: map[string]int64{}}
	for guid, id := range p.Handled {
		if id > next.After {
			next.Handled[guid] = id
		}
	}
	return next
}

// saveDeliveryPosition stores next when it moved. Losing the
// compare-and-set to another pass is not an error: that pass read the log
// too, and its position stands.
func (e *Engine) saveDeliveryPosition(ctx context.Context, cur *store.Cursor, next deliveryPosition) error {
	raw, err := json.Marshal(next)
	if err != nil {
		return fmt.Errorf("encode the delivery log cursor: %w", err)
	}
	if string(raw) == cur.Value {
		return nil
	}
	c := *cur
	c.Value, c.UpdatedAt = string(raw), e.now()
	err = e.store.PutCursor(ctx, &c)
	if errors.Is(err, store.ErrConflict) {
		e.log.Info("another reconcile pass moved the delivery log cursor first; keeping its position")
		return nil
	}
	if err != nil {
		return fmt.Errorf("store the delivery log cursor: %w", err)
	}
	return nil
}
