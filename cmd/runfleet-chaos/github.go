package main

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/runfleet/runfleet/internal/github/githubtest"
)

// The GitHub the run plays: one organization with one repository whose
// jobs runfleet's pool serves, and the GitHub App runfleet authenticates
// as, installed on the organization.
const (
	chaosOrg          = "chaos-org"
	chaosRepo         = chaosOrg + "/app"
	chaosPool         = "chaos"
	firstJobID        = 70_000_001 // far from the fake's runner ids (1001…), so a mix-up fails loudly
	chaosAppID        = 424_242
	chaosInstallation = 31_337
)

// jobLabels are what every job asks for and the pool offers.
var jobLabels = []string{"self-hosted", "linux", "x64"}

// gitHub is the fake GitHub (internal/github/githubtest) served on
// loopback by this process, so it outlives every runfleet restart and
// runfleet reaches it with its real go-github client, authenticated as a
// GitHub App: installation tokens for the runners and jobs, the App's JWT
// for its webhook delivery log, which the fake keeps of every delivery
// the senders attempt (githubtest's Deliver).
type gitHub struct {
	*githubtest.Server
	t *driverT
	// privateKeyPEM is the App's private key, for runfleet's config.
	privateKeyPEM []byte
	// extraKeysPEM are the keys of the extra Apps (-apps), whose ids
	// follow chaosAppID's: github.extra_apps.
	extraKeysPEM [][]byte
	// actions is the Actions service of a scale-set run (-intake
	// scaleset), served with the REST API behind one API root; nil
	// with webhooks.
	actions *actionsService
}

// baseURL is github.base_url of runfleet's config: the REST fake's GHES
// root, or with a scale set the root both fakes are served behind.
func (g *gitHub) baseURL() string {
	if g.actions != nil {
		return g.actions.apiURL()
	}
	return g.GHESURL()
}

// startGitHub serves the fake GitHub with apps GitHub Apps installed on
// the organization (the first is runfleet's, the others extra_apps).
func startGitHub(apps int) *gitHub {
	t := &driverT{}
	key := githubtest.GenerateAppKey(t)
	opts := []githubtest.Option{
		githubtest.WithApp(chaosAppID, key.PublicKey),
		githubtest.WithInstallation(chaosInstallation, chaosOrg),
		// The run measures runfleet under faults, not GitHub's rate limit:
		// the budget is counted and printed instead.
		githubtest.WithRateLimit(100_000_000),
	}
	var extra [][]byte
	for i := 1; i < apps; i++ {
		k := githubtest.GenerateAppKey(t)
		opts = append(opts, githubtest.WithApp(chaosAppID+int64(i), k.PublicKey),
			githubtest.WithAppInstallation(chaosAppID+int64(i), chaosInstallation+int64(i), chaosOrg))
		extra = append(extra, k.PrivateKeyPEM)
	}
	srv := githubtest.NewServer(t, opts...)
	srv.AddOrg(chaosOrg)
	return &gitHub{Server: srv, t: t, privateKeyPEM: key.PrivateKeyPEM, extraKeysPEM: extra}
}

// close stops the server.
func (g *gitHub) close() { g.t.cleanup() }

// driverT lets githubtest's server, written for tests, run in this
// program: it reports misuse through testing.TB, which here is collected
// and reported as a driver error. Only the methods the server calls are
// implemented; the embedded interface is nil.
type driverT struct {
	testing.TB
	mu       sync.Mutex
	problems []string
	cleanups []func()
}

func (t *driverT) Helper()      {}
func (t *driverT) Name() string { return "runfleet-chaos" }

func (t *driverT) Errorf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.problems = append(t.problems, fmt.Sprintf(format, args...))
}

func (t *driverT) Fatalf(format string, args ...any) {
	t.Errorf(format, args...)
	panic("runfleet-chaos: fake GitHub: " + fmt.Sprintf(format, args...))
}

func (t *driverT) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

func (t *driverT) cleanup() {
	t.mu.Lock()
	fs := t.cleanups
	t.cleanups = nil
	t.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

// err is every misuse the server reported, or nil.
func (t *driverT) err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.problems) == 0 {
		return nil
	}
	return fmt.Errorf("fake GitHub reported driver misuse: %s", strings.Join(t.problems, "; "))
}
