// Package cacheagent is the on-machine end of runfleet's actions/cache
// (docs/actions-cache.md): a small HTTPS endpoint on the runner machine that
// the machine resolves GitHub's results host to. The runner writes
// ACTIONS_RESULTS_URL and ACTIONS_RUNTIME_TOKEN over every node action's
// environment, so the only place left to point actions/cache at runfleet is
// the network under it. The agent answers the cache service's twirp calls
// with runfleet's cache, presenting the cache token runfleet minted for the
// machine's job instead of GitHub's, and passes every other call of the
// results service (artifacts, logs) through to the real host unchanged,
// resolved with real DNS rather than the /etc/hosts line that points the
// machine at the agent.
package cacheagent
