package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/runner"
)

// GitHub's webhook delivery log, as the App's /app/hook/deliveries serves
// it: every attempt GitHub made, with whether it succeeded. GitHub logs an
// attempt whatever became of it — dropped on the way (a timeout), refused
// by a process that was down, answered with an error, or answered after
// GitHub's 10 s timeout (logged failed although runfleet took it in) —
// and never resends one by itself. runfleet's reconcile passes read the
// log and recover what failed (engine/reconcile_deliveries.go), so no job
// is ever left queued because its deliveries were lost.

// deliveryTimeout is how long GitHub waits for an answer before it logs
// the attempt failed.
const deliveryTimeout = 10 * time.Second

// deliveryAttempt is one logged attempt.
type deliveryAttempt struct {
	id      int64
	guid    string
	at      time.Time
	ok      bool
	payload runner.JobEvent
}

// logAttempt records an attempt of delivery guid at the current time.
func (g *githubWorld) logAttempt(guid string, ok bool, payload runner.JobEvent) {
	g.deliveries = append(g.deliveries, &deliveryAttempt{
		id: int64(len(g.deliveries) + 1), guid: guid, at: g.w.now(), ok: ok, payload: payload,
	})
	if !ok {
		g.w.stats.inc("webhook.logged_failed")
	}
}

var _ github.DeliveryLog = (*githubAPI)(nil)

// deliveriesPerPage is GitHub's page size as runfleet asks for it.
const deliveriesPerPage = 100

// ListDeliveries serves the log newest first; the cursor is the id below
// which the next page starts.
func (a *githubAPI) ListDeliveries(ctx context.Context, cursor string) ([]github.Delivery, string, error) {
	g := a.g
	fault, err := a.call(ctx, "list_deliveries", 0)
	if err != nil {
		return nil, "", err
	}
	if err := a.refuse("list_deliveries", fault); err != nil {
		return nil, "", err
	}
	below := int64(len(g.deliveries)) + 1
	if cursor != "" {
		if below, err = strconv.ParseInt(cursor, 10, 64); err != nil {
			return nil, "", fmt.Errorf("github: list deliveries: bad cursor %q", cursor)
		}
	}
	var page []github.Delivery
	for i := below - 1; i >= 1 && len(page) < deliveriesPerPage; i-- {
		page = append(page, g.deliveries[i-1].summary())
	}
	next := ""
	if last := below - int64(len(page)); len(page) == deliveriesPerPage && last > 1 {
		next = strconv.FormatInt(last, 10)
	}
	return page, next, nil
}

// GetDelivery serves one attempt with its payload (the sim's payload is
// the job event itself, as JSON).
func (a *githubAPI) GetDelivery(ctx context.Context, id int64) (*github.Delivery, error) {
	g := a.g
	var d *deliveryAttempt
	if id >= 1 && id <= int64(len(g.deliveries)) {
		d = g.deliveries[id-1]
	}
	job := int64(0)
	if d != nil {
		job = d.payload.JobID
	}
	fault, err := a.call(ctx, "get_delivery", job)
	if err != nil {
		return nil, err
	}
	if err := a.refuse("get_delivery", fault); err != nil {
		return nil, err
	}
	if d == nil {
		return nil, fmt.Errorf("%w: delivery %d", github.ErrDeliveryNotFound, id)
	}
	out := d.summary()
	raw, err := json.Marshal(d.payload)
	if err != nil {
		return nil, err
	}
	out.Payload = raw
	g.w.stats.inc("webhook.fetched_from_log")
	g.w.tr.add("github get_delivery %d (%s, %s job %d)", id, d.guid, d.payload.Action, d.payload.JobID)
	return &out, nil
}

func (d *deliveryAttempt) summary() github.Delivery {
	status, code := "OK", 200
	if !d.ok {
		status, code = "Timed out", 504
	}
	return github.Delivery{
		ID: d.id, GUID: d.guid, DeliveredAt: d.at, Status: status, StatusCode: code,
		Event: github.EventWorkflowJob, Action: string(d.payload.Action), InstallationID: d.payload.InstallationID,
	}
}

// parseLogged reads a payload GetDelivery served.
func parseLogged(event string, payload []byte) (runner.JobEvent, error) {
	var ev runner.JobEvent
	if event != github.EventWorkflowJob {
		return ev, fmt.Errorf("not a workflow_job delivery: %q", event)
	}
	return ev, json.Unmarshal(payload, &ev)
}

// logged says whether GitHub's log holds an attempt of the job's event
// of that action, which runfleet can recover if it failed: in the model
// every attempt is logged, so a job's queued (and a completed job's
// completed) is always in it.
func (g *githubWorld) logged(j *ghJob, action runner.JobAction) bool {
	return slices.ContainsFunc(g.deliveries, func(d *deliveryAttempt) bool {
		return d.payload.JobID == j.ID && d.payload.Action == action
	})
}
