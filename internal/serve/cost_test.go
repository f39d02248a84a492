package serve_test

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/metrics"
	"github.com/runfleet/runfleet/internal/webhook"
)

// The tour's job on a pool priced in config: once its instance is
// deleted, /metrics counts its cost, and a monthly budget it passes sets
// runfleet_cost_budget_exceeded for the pool.
func TestServeCountsCostAndWarnsOverBudget(t *testing.T) {
	yaml, err := os.ReadFile("../../examples/local.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const pool = "linux-x64"
	config := strings.Replace(string(yaml), "dir: ./runfleet-data", "dir: "+t.TempDir(), 1)
	// $3600 an hour is a dollar a second: the job costs more than $0.50
	// however fast the simulated machine comes and goes.
	// The first pool, linux-x64, is priced in the example already: its
	// price is replaced.
	priced := strings.Replace(config, "    cost:\n      usd_per_hour: 0.0832\n", "    cost: {usd_per_hour: 3600, monthly_budget_usd: 0.5}\n", 1)
	if priced == config {
		t.Fatal("examples/local.yaml no longer has the pool this test prices")
	}
	s := startServe(t, func(string) string { return priced })
	send := func(file string) {
		t.Helper()
		body, err := os.ReadFile("../../examples/payloads/" + file)
		if err != nil {
			t.Fatal(err)
		}
		if res, err := webhook.Send(context.Background(), s.base+"/webhook", []byte("secret"), webhook.EventWorkflowJob, body, ""); err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("%s: %v %+v", file, err, res)
		}
	}
	budget := map[string]string{"pool": pool}
	if over, ok := sample(scrape(t, s.base+"/metrics", ""), metrics.CostBudgetExceeded, budget); !ok || over != 0 {
		t.Fatalf("%s before any cost = %v (present %t), want 0", metrics.CostBudgetExceeded, over, ok)
	}
	send("queued.json")
	enginetest.Eventually(t, "the tour job's machine to run", func() bool {
		running, _ := sample(scrape(t, s.base+"/metrics", ""), metrics.Instances, map[string]string{"pool": pool, "status": "running"})
		return running == 1
	})
	send("in_progress.json")
	send("completed.json")
	enginetest.Eventually(t, "the deleted instance's cost to be counted over the budget", func() bool {
		families := scrape(t, s.base+"/metrics", "")
		spent, _ := sample(families, metrics.CostDollars, budget)
		over, _ := sample(families, metrics.CostBudgetExceeded, budget)
		return spent > 0.5 && over == 1
	})
}
