package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/github/githubtest"
)

func TestPlanPutsTheOutageAmongTheArrivalsAndNoKillInIt(t *testing.T) {
	s := testSettings()
	s.arrival, s.outage = 2*time.Minute, time.Minute
	for seed := uint64(1); seed <= 50; seed++ {
		s.seed = seed
		p := newPlan(s)
		if len(p.kills) != s.kills+1 {
			t.Fatalf("seed %d: %d kills, want %d and the outage", seed, len(p.kills), s.kills)
		}
		var outage *kill
		for i := range p.kills {
			if i > 0 && p.kills[i].at < p.kills[i-1].at {
				t.Fatalf("seed %d: kills out of order: %+v", seed, p.kills)
			}
			if p.kills[i].outage {
				if outage != nil {
					t.Fatalf("seed %d: two outages", seed)
				}
				outage = &p.kills[i]
			}
		}
		if outage == nil || outage.downtime != s.outage || outage.at < s.arrival/4 || outage.at > s.arrival*3/8 {
			t.Fatalf("seed %d: outage %+v; want one of %s between %s and %s", seed, outage, s.outage, s.arrival/4, s.arrival*3/8)
		}
		for _, k := range p.kills {
			if !k.outage && k.at > outage.at-outageGap && k.at < outage.at+outage.downtime+outageGap {
				t.Errorf("seed %d: kill at %s inside the outage (%s, for %s)", seed, k.at, outage.at, outage.downtime)
			}
		}
	}
	s.outage = 0
	for _, k := range newPlan(s).kills {
		if k.outage {
			t.Fatal("-outage 0 planned an outage")
		}
	}
}

// The report's delivery figures: lost is every GUID no attempt delivered,
// recovered what runfleet's log lines name.
func TestDeliveryLogCountsLostAndRecovered(t *testing.T) {
	attempts := []githubtest.Delivery{
		{GUID: "a", Action: "queued", StatusCode: 502},
		{GUID: "a", Action: "queued", StatusCode: 200},  // resent and delivered
		{GUID: "b", Action: "queued", StatusCode: 502},  // lost, recovered
		{GUID: "c", Action: "completed", StatusCode: 0}, // lost, not recovered
		{GUID: "d", Action: "in_progress", StatusCode: 202},
	}
	dir := t.TempDir()
	logs := []string{filepath.Join(dir, "serve-1.log"), filepath.Join(dir, "serve-2.log")}
	lines := []string{
		`{"level":"INFO","msg":"lost webhook delivery recovered from GitHub's delivery log","delivery_id":"b"}` + "\n" + `not json` + "\n",
		`{"level":"INFO","msg":"lost webhook delivery recovered from GitHub's delivery log","delivery_id":"a"}` + "\n" +
			`{"level":"INFO","msg":"something else recovered from GitHub","delivery_id":"c"}` + "\n",
	}
	for i, l := range lines {
		if err := os.WriteFile(logs[i], []byte(l), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	dl, err := readDeliveryLog(attempts, logs, map[string]int{githubtest.RouteAppHookDelivery: 2, githubtest.RouteAppHookDeliveries: 9})
	if err != nil {
		t.Fatal(err)
	}
	if dl.attempts != 5 || dl.failed != 3 || len(dl.lost) != 2 || dl.fetches != 2 || dl.lists != 9 {
		t.Errorf("attempts %d, failed %d, lost %v, fetches %d, lists %d", dl.attempts, dl.failed, dl.lost, dl.fetches, dl.lists)
	}
	if lost, resent := dl.recoveredLost(); lost != 1 || resent != 1 {
		t.Errorf("recovered %d lost and %d resent, want 1 and 1", lost, resent)
	}
	if un := dl.unrecovered(); len(un) != 1 || un[0] != "c (completed)" {
		t.Errorf("unrecovered %v, want c", un)
	}
	if by := dl.lostByAction(); by["queued"] != 1 || by["completed"] != 1 {
		t.Errorf("lost by action %v", by)
	}
}
