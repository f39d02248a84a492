package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/metrics"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/telemetry"
	"github.com/runfleet/runfleet/internal/webhook"
	"github.com/runfleet/runfleet/providers"
)

// benchServe is embedded mode's HTTP surface (routes: webhook intake, API,
// health, metrics) on a loopback server, over the test world — the bolt
// store with the queue in its file, as Run opens it, the simulated GitHub
// and the simulated provider with no latency, so that what is measured is
// runfleet alone — with its workers and reconciler running. Each provider
// is wrapped in a createClock.
type benchServe struct {
	url     string
	creates *createClock
	client  *http.Client
}

type benchServeOptions struct {
	workers int
	// noWorkers leaves queued work on the queue, isolating webhook intake.
	noWorkers bool
}

var benchSecret = []byte("bench-webhook-secret")

func startBenchServe(tb testing.TB, o benchServeOptions) *benchServe {
	tb.Helper()
	if o.workers == 0 {
		o.workers = config.DefaultWorkers
	}
	cfg := benchConfig(tb, tb.TempDir(), o.workers)
	// Info level as deployed: formatting each JSON line is part of the cost
	// of a job; only the write is thrown away.
	log := telemetry.NewLogger(io.Discard, slog.LevelInfo)
	clock := newCreateClock()
	// Metrics as Run wires them: the recorder hears the engine, the
	// providers and the webhooks, so their cost is in every figure. The
	// world opens its store after wrapping the providers, so this recorder
	// reads none: the benchmarks never scrape.
	rec := newRecorder(cfg, nil, nil, nil, metrics.Build{})
	w := enginetest.NewWorld(tb, enginetest.Options{
		Pools: enginetest.OnePool(func(p *runner.Pool) { p.MaxRunners = 1_000_000 }),
		WrapProvider: func(pool string, p providers.Provider) providers.Provider {
			return metrics.ObserveProviders(map[string]providers.Provider{pool: clock.wrap(p)}, rec)[pool]
		},
		Engine: func(o *engine.Options) { o.Observer = rec },
		Logger: log,
	})
	rec.CountStuck(w.Engine.Stuck)
	handler, err := routes(cfg, w.Engine, w.Store, w.Queue, rec, log, nil)
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv := newHTTPServer(handler, log)
	go func() { _ = srv.Serve(ln) }()

	if !o.noWorkers {
		w.StartWorkers(cfg.Engine.Workers)
	}
	reconcileCtx, stopReconciler := context.WithCancel(context.Background())
	var background sync.WaitGroup
	reconcile := &reconciler{engine: w.Engine, purger: w.Store.(store.Purger), interval: cfg.Engine.ReconcileInterval, log: log, metrics: rec}
	background.Go(func() { reconcile.run(reconcileCtx) })

	// Enough idle connections for every client goroutine, so the
	// benchmarks measure requests rather than TCP handshakes.
	transport := &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute}
	bs := &benchServe{
		url:     "http://" + ln.Addr().String() + "/webhook",
		creates: clock,
		client:  &http.Client{Transport: transport, Timeout: 30 * time.Second},
	}
	// Registered after the world's: runs first, before its files close.
	tb.Cleanup(func() {
		transport.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			tb.Errorf("HTTP shutdown: %v", err)
		}
		stopReconciler()
		background.Wait()
	})
	return bs
}

// benchConfig is what the routes and the workers read (the webhook secret
// and limits, engine.workers); the engine serves the world's pool, which
// this one mirrors.
func benchConfig(tb testing.TB, dir string, workers int) *config.Config {
	tb.Helper()
	yaml := fmt.Sprintf(`
controller_id: bench
github: {simulated: true}
webhook: {secret_env: SECRET}
store: {dir: %q}
engine: {workers: %d}
pools:
  - name: %s
    owner: octo-org
    labels: [self-hosted, linux, x64]
    max_runners: 1000000
    provider: {type: simulated}
`, dir, workers, enginetest.Pool)
	cfg, err := config.Parse([]byte(yaml), func(string) (string, bool) { return string(benchSecret), true }, nil)
	if err != nil {
		tb.Fatalf("bench config: %v", err)
	}
	return cfg
}

// post delivers one signed webhook as GitHub does and fails unless it was
// answered 2xx.
func (s *benchServe) post(event string, body []byte, deliveryID string) error {
	req, err := http.NewRequest(http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(webhook.EventHeader, event)
	req.Header.Set(webhook.DeliveryHeader, deliveryID)
	req.Header.Set(webhook.SignatureHeader, webhook.Sign(benchSecret, body))
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("delivery %s answered %d: %s", deliveryID, resp.StatusCode, answer)
	}
	return nil
}

// postJob delivers the queued webhook of one job.
func (s *benchServe) postJob(payload *queuedPayload, jobID int64) error {
	return s.post(webhook.EventWorkflowJob, payload.forJob(jobID), "bench-"+strconv.FormatInt(jobID, 10))
}

// queuedPayload is examples/payloads/queued.json, a GitHub-shaped delivery
// of about 8.6 KB, cut around workflow_job.id so each job's body costs an
// append rather than a JSON encode.
type queuedPayload struct {
	before, after []byte
}

// idMark stands in for the job id while the template is cut.
const idMark = 987654321987654321

func loadQueuedPayload(tb testing.TB) *queuedPayload {
	tb.Helper()
	raw, err := os.ReadFile("../../examples/payloads/queued.json")
	if err != nil {
		tb.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		tb.Fatal(err)
	}
	job, ok := doc["workflow_job"].(map[string]any)
	if !ok {
		tb.Fatal("queued.json has no workflow_job object")
	}
	job["id"] = idMark
	body, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		tb.Fatal(err)
	}
	before, after, found := bytes.Cut(body, []byte(strconv.Itoa(idMark)))
	if !found || bytes.Contains(after, []byte(strconv.Itoa(idMark))) {
		tb.Fatal("job id mark not found exactly once in the payload")
	}
	return &queuedPayload{before: before, after: after}
}

func (p *queuedPayload) forJob(id int64) []byte {
	b := make([]byte, 0, len(p.before)+20+len(p.after))
	b = append(b, p.before...)
	b = strconv.AppendInt(b, id, 10)
	return append(b, p.after...)
}

// createClock wraps providers to note when CreateInstance is called for
// each instance name, and how many times.
type createClock struct {
	mu      sync.Mutex
	firstAt map[string]time.Time
	calls   map[string]int
	// changed is signalled (never blocking) after every call, to wake one
	// waiter.
	changed chan struct{}
}

func newCreateClock() *createClock {
	return &createClock{firstAt: map[string]time.Time{}, calls: map[string]int{}, changed: make(chan struct{}, 1)}
}

func (c *createClock) wrap(p providers.Provider) providers.Provider {
	return &clockedProvider{Provider: p, clock: c}
}

type clockedProvider struct {
	providers.Provider
	clock *createClock
}

func (p *clockedProvider) CreateInstance(ctx context.Context, req providers.CreateRequest) (providers.Instance, error) {
	p.clock.note(req.Name, time.Now())
	return p.Provider.CreateInstance(ctx, req)
}

func (c *createClock) note(name string, at time.Time) {
	c.mu.Lock()
	if c.calls[name] == 0 {
		c.firstAt[name] = at
	}
	c.calls[name]++
	c.mu.Unlock()
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// await blocks until done (called under the clock's lock) holds, or fails
// after timeout. One goroutine at a time may wait.
func (c *createClock) await(timeout time.Duration, done func() bool) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		ok := done()
		c.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-c.changed:
		case <-deadline.C:
			return fmt.Errorf("provider creates still incomplete after %s (%d instances so far)", timeout, c.distinct())
		}
	}
}

// createdAt returns when name's first create was called, waiting for it.
func (c *createClock) createdAt(name string, timeout time.Duration) (time.Time, error) {
	var at time.Time
	err := c.await(timeout, func() bool {
		var ok bool
		at, ok = c.firstAt[name]
		return ok
	})
	return at, err
}

func (c *createClock) distinct() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.calls)
}

// duplicates names every instance whose create was called more than once.
func (c *createClock) duplicates() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var dup []string
	for name, n := range c.calls {
		if n > 1 {
			dup = append(dup, fmt.Sprintf("%s (%d creates)", name, n))
		}
	}
	slices.Sort(dup)
	return dup
}

// percentileMS is the nearest-rank percentile p (0 < p <= 1) of sorted
// durations, in milliseconds.
func percentileMS(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p*float64(len(sorted)))) - 1
	return float64(sorted[max(rank, 0)]) / float64(time.Millisecond)
}
