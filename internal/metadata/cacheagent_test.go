package metadata_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/runfleet/runfleet/internal/metadata"
	"github.com/runfleet/runfleet/internal/runner"
)

// metadata/cache-agent gives a machine of a pool that uses runfleet's cache
// its agent's configuration, with its instance token; 404 otherwise.
func TestCacheAgentConfiguration(t *testing.T) {
	h := newBootHarness(t, harnessOptions{cacheAgent: func(inst *runner.Instance) (metadata.CacheAgentConfig, bool, error) {
		return metadata.CacheAgentConfig{CacheURL: "https://rf", AgentToken: "agent-" + inst.Name, ResultsHosts: []string{"results.example"}}, true, nil
	}})
	name := h.queueJob(101)
	req := h.createRequest(name, 1)
	h.WaitStatus(name, runner.StatusRunning)
	m := h.machineFor(req)
	r := m.get("cache-agent")
	var cfg metadata.CacheAgentConfig
	if r.status != http.StatusOK || json.Unmarshal(r.body, &cfg) != nil || cfg.AgentToken != "agent-"+name || r.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("cache-agent = %d %s", r.status, r.body)
	}
	m.token = "not-a-token"
	if r := m.get("cache-agent"); r.status != http.StatusUnauthorized {
		t.Fatalf("cache-agent without the instance token = %d", r.status)
	}
}

func TestCacheAgentOff(t *testing.T) {
	for name, fn := range map[string]metadata.CacheAgentFunc{
		"the cache is off": nil,
		"the pool does not use it": func(*runner.Instance) (metadata.CacheAgentConfig, bool, error) {
			return metadata.CacheAgentConfig{}, false, nil
		},
	} {
		t.Run(name, func(t *testing.T) {
			h := newBootHarness(t, harnessOptions{cacheAgent: fn})
			inst := h.queueJob(101)
			req := h.createRequest(inst, 1)
			h.WaitStatus(inst, runner.StatusRunning)
			r := h.machineFor(req).get("cache-agent")
			if r.status != http.StatusNotFound || !strings.Contains(r.errorText(t), "off") {
				t.Fatalf("cache-agent = %d %s", r.status, r.body)
			}
		})
	}
}
