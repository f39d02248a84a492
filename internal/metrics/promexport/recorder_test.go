package promexport_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/metrics"
	"github.com/runfleet/runfleet/internal/metrics/promexport"
)

// The hot paths — a job's queue time, a provider call — allocate nothing
// for a configured pool: their series are looked up once, at start.
func TestHotPathsDoNotAllocate(t *testing.T) {
	rec := promexport.New([]string{"p"}, promexport.State{})
	for name, f := range map[string]func(){
		"JobWaited":       func() { rec.JobWaited("p", engine.StageCreated, 3*time.Second) },
		"ProviderCalled":  func() { rec.ProviderCalled("p", metrics.OpCreate, nil, time.Second) },
		"failed call":     func() { rec.ProviderCalled("p", metrics.OpDelete, errors.New("no"), time.Second) },
		"InstanceChanged": func() { rec.InstanceChanged(nil, "") },
		"Webhook":         func() { rec.Webhook("workflow_job", "queued", metrics.WebhookAccepted) },
	} {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s allocates %v times per call, want 0", name, n)
		}
	}
}

// Every family of the vocabulary is registered, and nothing else of
// runfleet's: the Go and process collectors aside. The listener families
// show once a pool has a listener; the rate limit and the refused Apps
// come from a real GitHub client, which this has none of.
func TestRegistryHoldsTheVocabulary(t *testing.T) {
	rec := promexport.New([]string{"p"}, promexport.State{})
	rec.WatchListeners([]string{"p"})
	got, err := rec.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range got {
		names[f.GetName()] = true
	}
	for _, f := range metrics.Families {
		if !names[f.Name] && f.Name != metrics.GitHubRateLimitRemaining && f.Name != metrics.GitHubAppRefused {
			t.Errorf("%s not registered", f.Name)
		}
	}
	for name := range names {
		if _, ok := metrics.FamilyByName(name); strings.HasPrefix(name, "runfleet_") && !ok {
			t.Errorf("%s is registered but not in the vocabulary", name)
		}
	}
}

// BenchmarkJobWaited is the cost of one queue-time observation.
func BenchmarkJobWaited(b *testing.B) {
	rec := promexport.New([]string{"p"}, promexport.State{})
	b.ReportAllocs()
	for b.Loop() {
		rec.JobWaited("p", engine.StageCreated, 3*time.Second)
	}
}
