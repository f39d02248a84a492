package rest_test

// Lost webhook deliveries: GitHub's delivery log (the fake's), runfleet's
// client and the real engine recover what GitHub failed to deliver.

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/githubtest"
	"github.com/runfleet/runfleet/internal/github/rest"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/webhook"
)

var webhookSecret = []byte("It's a Secret to Everybody")

// hookWorld is the world with runfleet's webhook intake served over HTTP,
// where the fake GitHub sends its deliveries.
type hookWorld struct {
	*world
	url string
	// listRoute and getRoute are the delivery log's routes on the fake.
	listRoute, getRoute string
	engine              atomic.Pointer[engine.Engine] // the intake's engine, swapped by restart
}

func newHookWorld(t *testing.T, failRate float64, kind githubtest.DeliveryFailure, recovery engine.DeliveryRecovery, more ...func(*worldOptions)) *hookWorld {
	t.Helper()
	o := worldOptions{deliveries: &recovery, maxRunners: 50}
	if failRate > 0 {
		o.fakeOptions = append(o.fakeOptions, githubtest.WithFailedDeliveries(failRate, kind))
	}
	for _, m := range more {
		m(&o)
	}
	h := &hookWorld{world: newWorld(t, o), listRoute: githubtest.RouteAppHookDeliveries, getRoute: githubtest.RouteAppHookDelivery}
	if o.hook != "" {
		h.listRoute, h.getRoute = githubtest.RouteOrgHookDeliveries, githubtest.RouteOrgHookDelivery
	}
	h.engine.Store(h.Engine)
	intake, err := webhook.New(webhook.Options{Secret: webhookSecret, Handler: h, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(intake)
	t.Cleanup(srv.Close)
	h.url = srv.URL
	return h
}

// HandleJobEvent hands a webhook's event to the current engine.
func (h *hookWorld) HandleJobEvent(ctx context.Context, ev runner.JobEvent, meta engine.EventMeta) (engine.Outcome, error) {
	return h.engine.Load().HandleJobEvent(ctx, ev, meta)
}

// restart is a restarted `runfleet serve`: a new engine over the same
// store, workers running again.
func (h *hookWorld) restart() {
	h.Restart()
	h.engine.Store(h.Engine)
	h.StartWorkers(2)
}

// queue adds jobs to the fake and has it send each one's queued webhook.
func (h *hookWorld) queue(ids ...int64) {
	h.TB.Helper()
	for _, id := range ids {
		h.fake.AddJob(githubtest.Job{ID: id, Repo: testRepo, Labels: enginetest.Labels()})
		if _, err := h.fake.SendWorkflowJob(h.url, webhookSecret, id, "queued", testInstallationID); err != nil {
			h.TB.Fatal(err)
		}
	}
}

// reconcile runs one pass and returns its report and the delivery log
// calls it made.
func (h *hookWorld) reconcile() (engine.ReconcileReport, int, int) {
	h.TB.Helper()
	lists, gets := len(h.callsAt(h.listRoute)), len(h.callsAt(h.getRoute))
	rep, err := h.Engine.Reconcile(context.Background())
	if err != nil {
		h.TB.Fatalf("reconcile: %v", err)
	}
	return rep, len(h.callsAt(h.listRoute)) - lists, len(h.callsAt(h.getRoute)) - gets
}

// requireOneInstanceEach waits until every job has its instance running
// and checks none has two.
func (h *hookWorld) requireOneInstanceEach(ids ...int64) {
	h.TB.Helper()
	for _, id := range ids {
		h.WaitStatus(enginetest.InstanceName(id), runner.StatusRunning)
	}
	per := map[int64]int{}
	for _, inst := range h.Live() {
		per[inst.JobID]++
	}
	for _, id := range ids {
		if per[id] != 1 {
			h.TB.Errorf("job %d has %d live instances, want 1", id, per[id])
		}
		if made := h.Job(id).Made; made != 1 {
			h.TB.Errorf("job %d: %d instances made, want 1", id, made)
		}
	}
}

func jobIDs(from int64, n int) []int64 {
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = from + int64(i)
	}
	return ids
}

// One queued delivery in five fails at GitHub's side and is never resent:
// every job still gets exactly one instance, within two reconcile passes —
// recovered from the App's delivery log, or, with a token, from the log of
// the organization's webhook that sends the events.
func TestLostQueuedDeliveriesAreRecoveredFromTheDeliveryLog(t *testing.T) {
	t.Run("App", func(t *testing.T) {
		recoverLostQueuedDeliveries(t, newHookWorld(t, 0.2, githubtest.DeliveryUnsent, engine.DeliveryRecovery{}))
	})
	t.Run("token and organization webhook", func(t *testing.T) {
		h := newHookWorld(t, 0.2, githubtest.DeliveryUnsent, engine.DeliveryRecovery{}, func(o *worldOptions) { o.token, o.hook = true, testOrg })
		recoverLostQueuedDeliveries(t, h)
		for _, c := range h.fake.Calls() {
			if c.Route == githubtest.RouteOrgHookDeliveries && !strings.HasPrefix(c.Identity, "token:") {
				t.Fatalf("webhook log read as %q, want the token", c.Identity)
			}
		}
	})
}

func recoverLostQueuedDeliveries(t *testing.T, h *hookWorld) {
	ids := jobIDs(1001, 20)
	h.queue(ids...)
	lost := 0
	for _, d := range h.fake.Deliveries() {
		if !d.Sent {
			lost++
		}
	}
	if lost != 4 {
		t.Fatalf("%d deliveries failed at GitHub's side, want 4 of 20", lost)
	}
	if live := len(h.Live()); live != 16 {
		t.Fatalf("%d instances before any reconcile pass, want 16", live)
	}
	first, lists, gets := h.reconcile()
	second, _, moreGets := h.reconcile()
	if got := first.DeliveriesRecovered + second.DeliveriesRecovered; got != 4 {
		t.Errorf("recovered %d deliveries in two passes, want 4", got)
	}
	if lists != 1 || gets != 4 || moreGets != 0 {
		t.Errorf("first pass: %d list and %d get calls, want 1 and 4; second pass fetched %d again", lists, gets, moreGets)
	}
	h.requireOneInstanceEach(ids...)
	recovered := h.Logs.WithMessage(t, "lost webhook delivery recovered")
	if len(recovered) != 4 {
		t.Fatalf("%d recoveries logged, want 4", len(recovered))
	}
	for _, line := range recovered {
		if line["delivery_id"] == "" || line["job_id"] == nil || line["pool"] != enginetest.Pool || line["result"] != engine.ResultCreated {
			t.Errorf("recovery logged as %v, want its delivery_id, job_id, pool and %s", line, engine.ResultCreated)
		}
	}
}

// A pass with nothing lost costs one list call and no other delivery log
// call.
func TestDeliveryLogPassWithNothingLostCostsOneCall(t *testing.T) {
	h := newHookWorld(t, 0, 0, engine.DeliveryRecovery{})
	h.queue(jobIDs(2001, 5)...)
	for pass := 1; pass <= 2; pass++ {
		rep, lists, gets := h.reconcile()
		if lists != 1 || gets != 0 || rep.DeliveriesRecovered != 0 {
			t.Errorf("pass %d: %d list and %d get calls, %d recovered; want 1, 0, 0", pass, lists, gets, rep.DeliveriesRecovered)
		}
	}
}

// Deliveries GitHub logged as failed although runfleet processed them (a
// timeout) arrive twice — by webhook and by recovery — and make one
// instance each. The position survives a restart: the new engine reads
// only what is newer.
func TestRecoveredDuplicatesMakeNothingAndThePositionSurvivesARestart(t *testing.T) {
	h := newHookWorld(t, 0.5, githubtest.DeliveryTimedOut, engine.DeliveryRecovery{Settle: time.Millisecond})
	ids := jobIDs(3001, 6)
	h.queue(ids...)
	h.requireOneInstanceEach(ids...)
	rep, lists, gets := h.reconcile()
	if lists != 1 || gets != 3 || rep.DeliveriesRecovered != 3 {
		t.Fatalf("first pass: %d list, %d get calls, %d recovered; want 1, 3, 3", lists, gets, rep.DeliveriesRecovered)
	}
	h.requireOneInstanceEach(ids...)
	for _, line := range h.Logs.WithMessage(t, "lost webhook delivery recovered") {
		if line["result"] == engine.ResultCreated {
			t.Errorf("a delivery runfleet had processed made an instance when recovered: %v", line)
		}
	}

	h.restart()
	cur, err := h.Store.GetCursor(context.Background(), engine.DeliveryCursorName)
	if err != nil || cur.Version == 0 {
		t.Fatalf("delivery log cursor after the restart: %+v, %v", cur, err)
	}
	rep, lists, gets = h.reconcile()
	if lists != 1 || gets != 0 || rep.DeliveriesRecovered != 0 {
		t.Fatalf("pass after the restart: %d list, %d get calls, %d recovered; want 1, 0, 0", lists, gets, rep.DeliveriesRecovered)
	}
	more := jobIDs(3101, 2)
	h.queue(more...)
	rep, _, gets = h.reconcile()
	if gets != 1 || rep.DeliveriesRecovered != 1 {
		t.Fatalf("pass after two new deliveries: %d get calls, %d recovered; want 1, 1", gets, rep.DeliveriesRecovered)
	}
	h.requireOneInstanceEach(append(ids, more...)...)
}

// A client with a token has no delivery log: a typed error, no call.
func TestDeliveryLogNeedsAnApp(t *testing.T) {
	srv := fakeGitHub(t)
	c, err := rest.New(rest.Options{BaseURL: srv.URL(), Token: testPAT})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.ListDeliveries(context.Background(), ""); !errors.Is(err, github.ErrNoDeliveryLog) || !errors.Is(err, github.ErrMisconfigured) {
		t.Fatalf("ListDeliveries with a token: %v, want ErrNoDeliveryLog", err)
	}
	if _, err := c.GetDelivery(context.Background(), 1); !errors.Is(err, github.ErrNoDeliveryLog) {
		t.Fatalf("GetDelivery with a token: %v, want ErrNoDeliveryLog", err)
	}
	if n := srv.APICallCount(); n != 0 {
		t.Fatalf("%d calls made", n)
	}
	app := appClient(t, srv, 0, nil)
	if _, err := app.GetDelivery(context.Background(), 12345); !errors.Is(err, github.ErrDeliveryNotFound) {
		t.Fatalf("GetDelivery of an unknown delivery: %v, want ErrDeliveryNotFound", err)
	}
}

// The client follows GitHub's cursor pagination: 100 a page, newest first,
// the next page's cursor from the Link header, "" on the last page; a
// delivery read in full carries the request GitHub sent.
func TestListDeliveriesPagesByCursor(t *testing.T) {
	srv := fakeGitHub(t, githubtest.WithFailedDeliveries(0.01, githubtest.DeliveryUnsent))
	hook := httptest.NewServer(intakeOK{})
	t.Cleanup(hook.Close)
	srv.AddJob(githubtest.Job{ID: 1, Repo: testRepo, Labels: enginetest.Labels()})
	for range 150 {
		if _, err := srv.SendWorkflowJob(hook.URL, webhookSecret, 1, "queued", testInstallationID); err != nil {
			t.Fatal(err)
		}
	}
	c := appClient(t, srv, 0, nil)
	ctx := context.Background()
	first, next, err := c.ListDeliveries(ctx, "")
	if err != nil || len(first) != 100 || next == "" {
		t.Fatalf("page 1: %d deliveries, next %q, %v; want 100 and a cursor", len(first), next, err)
	}
	second, last, err := c.ListDeliveries(ctx, next)
	if err != nil || len(second) != 50 || last != "" {
		t.Fatalf("page 2: %d deliveries, next %q, %v; want 50 and no cursor", len(second), last, err)
	}
	all := append(first, second...)
	for i := 1; i < len(all); i++ {
		if all[i].ID >= all[i-1].ID {
			t.Fatalf("deliveries not newest first at %d: %d after %d", i, all[i].ID, all[i-1].ID)
		}
	}
	failed := 0
	for _, d := range all {
		if !d.Delivered() {
			failed++
		}
		if d.Event != github.EventWorkflowJob || d.Action != "queued" || d.GUID == "" || d.InstallationID != testInstallationID || d.DeliveredAt.IsZero() {
			t.Fatalf("delivery %+v", d)
		}
	}
	if failed != 1 {
		t.Errorf("%d failed deliveries listed, want 1 (1%% of 150)", failed)
	}
	full, err := c.GetDelivery(ctx, all[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := webhook.ParseRecovered(full.Event, full.Payload)
	if err != nil || ev.JobID != 1 || full.Headers["X-Github-Delivery"] != all[0].GUID {
		t.Fatalf("delivery read in full: %+v (headers %v), %v", ev, full.Headers, err)
	}
}

// intakeOK answers every delivery 200.
type intakeOK struct{}

func (intakeOK) ServeHTTP(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }

// A webhook GitHub does not show (a wrong id, or a token that may not
// read the owner's webhooks) is a misconfiguration that says what to
// check; a delivery gone from its log is ErrDeliveryNotFound.
func TestHookDeliveryLogOfAnUnknownHookSaysWhatToCheck(t *testing.T) {
	srv := fakeGitHub(t)
	c, err := rest.New(rest.Options{BaseURL: srv.GHESURL(), Token: testPAT})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	wrong := c.HookDeliveries(github.Hook{Owner: github.Owner{Org: testOrg}, ID: 99})
	if _, _, err := wrong.ListDeliveries(ctx, ""); !errors.Is(err, github.ErrMisconfigured) || !strings.Contains(err.Error(), "github.hooks") {
		t.Fatalf("list of an unknown webhook: %v, want ErrMisconfigured naming github.hooks", err)
	}
	id := srv.AddHook(testOrg)
	known := c.HookDeliveries(github.Hook{Owner: github.Owner{Org: testOrg}, ID: id})
	if _, err := known.GetDelivery(ctx, 12345); !errors.Is(err, github.ErrDeliveryNotFound) {
		t.Fatalf("get of an unknown delivery: %v, want ErrDeliveryNotFound", err)
	}
}
