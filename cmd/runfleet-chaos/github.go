package main

import (
	"github.com/runfleet/runfleet/internal/github/githubtest"
	"github.com/runfleet/runfleet/internal/programtb"
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
	t *programtb.TB
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
	t := &programtb.TB{Program: "runfleet-chaos"}
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
func (g *gitHub) close() { g.t.RunCleanups() }
