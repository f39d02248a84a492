package statuspage

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/cost"
	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/testclock"
)

// sourceOnly is the engine seen only as a Source: it cannot list deleted
// instances, as the page sees a source over DynamoDB.
type sourceOnly struct{ Source }

// A job that ran 30 minutes on a pool priced $0.36 an hour shows as the
// pool's $0.18; a source that cannot list deleted instances shows n/a.
func TestPageShowsWhatEachPoolCost(t *testing.T) {
	clock := testclock.At(time.Date(2026, time.November, 28, 9, 0, 0, 0, time.UTC))
	prices := cost.NewPrices(cost.Table{Pools: map[string]float64{enginetest.Pool: 0.36}}, nil, 0, clock.Now)
	w := enginetest.NewWorld(t, enginetest.Options{Now: clock.Now, Engine: func(o *engine.Options) { o.Prices = prices }})
	w.StartWorkers(1)
	t.Cleanup(w.StopWorkers)
	name := w.RunJob(201)
	clock.Advance(30 * time.Minute)
	w.Deliver(enginetest.Event(runner.ActionCompleted, 201, name))
	w.WaitStatus(name, runner.StatusDeleted)

	h := New(Options{Source: w.Engine, Token: pageToken, Now: clock.Now})
	rr := get(h, "/?token="+pageToken, "192.0.2.7:4242", nil)
	if rr.Code != http.StatusOK {
		t.Fatalf("GET /: %d %s", rr.Code, rr.Body)
	}
	for _, want := range []string{`<th class="num">cost, 7 days</th>`, `data-cost-usd="0.180000" data-cost-unknown="0"`, `<td class="num cost">$0.18</td>`} {
		if !strings.Contains(rr.Body.String(), want) {
			t.Errorf("page lacks %s", want)
		}
	}

	h = New(Options{Source: sourceOnly{w.Engine}, Token: pageToken, Now: clock.Now})
	if body := get(h, "/?token="+pageToken, "192.0.2.7:4242", nil).Body.String(); !strings.Contains(body, `<td class="num cost">n/a</td>`) {
		t.Errorf("a source without deleted instances: page lacks n/a:\n%s", body)
	}
}
