package metadata

import (
	"net/http"

	"github.com/runfleet/runfleet/internal/runner"
)

// CacheAgentFunc returns what a machine of inst's pool needs to run
// runfleet's cache agent (docs/actions-cache.md): ok is false when the
// cache is off for the pool.
type CacheAgentFunc func(inst *runner.Instance) (cfg CacheAgentConfig, ok bool, err error)

// CacheAgentConfig is the machine's cache agent configuration, written to
// a root-only file at boot: the agent token is the machine's credential for
// trading its job's description for the job's cache token later, when the
// instance token is spent.
type CacheAgentConfig struct {
	CacheURL     string   `json:"cache_url"`
	AgentToken   string   `json:"agent_token"`
	ResultsHosts []string `json:"results_hosts"`
}

// cacheAgent serves metadata/cache-agent: 404 when the pool does not use
// runfleet's cache, so the install script skips the agent.
func (h *Handler) cacheAgent(w http.ResponseWriter, _ *http.Request, req *request) {
	if h.cacheAgentFn == nil {
		h.refuse(w, req.log, http.StatusNotFound, "runfleet's actions/cache is off")
		return
	}
	cfg, ok, err := h.cacheAgentFn(req.instance)
	switch {
	case err != nil:
		req.log.Error("cache agent configuration failed", "error", err)
		h.refuse(w, req.log, http.StatusServiceUnavailable, "the control plane could not answer; retry")
	case !ok:
		h.refuse(w, req.log, http.StatusNotFound, "runfleet's actions/cache is off for pool "+req.instance.Pool+" (cache.pools)")
	default:
		writeJSON(w, http.StatusOK, cfg)
	}
}
