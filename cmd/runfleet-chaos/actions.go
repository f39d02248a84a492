package main

import (
	"net/http/httptest"
	"sync"

	"github.com/runfleet/runfleet/internal/github/githubtest"
	"github.com/runfleet/runfleet/internal/github/scaleset/scalesettest"
)

// The intakes: how jobs reach runfleet.
const (
	intakeWebhook  = "webhook"
	intakeScaleSet = "scaleset"
)

// chaosScaleSet is the scale set the served pool listens to; its jobs
// ask for it by name, as `runs-on: chaos-scale` does.
const chaosScaleSet = "chaos-scale"

// actionsService is GitHub's Actions service for a scale-set run
// (internal/github/scaleset/scalesettest), served beside the REST fake
// behind one front, as github.com serves both: the registration call
// goes to the Actions fake, every other API call to the REST fake, which
// mints the registration tokens the Actions fake accepts.
type actionsService struct {
	*scalesettest.Server
	front *httptest.Server

	mu    sync.Mutex
	setID int64 // 0 until runfleet's listener made the scale set
}

// startActions serves the Actions fake and the front for gh. The front
// and the fake close with gh.
func startActions(gh *gitHub, opts scalesettest.Options) *actionsService {
	a := &actionsService{}
	opts.Owner.Org = chaosOrg
	a.front, a.Server = scalesettest.BehindREST(gh.t, gh.URL(), scalesettest.Minted(gh.Server), opts)
	return a
}

// apiURL is the API root runfleet is configured with (github.base_url).
func (a *actionsService) apiURL() string {
	return a.front.URL + githubtest.GHESPathPrefix + "/"
}

// scaleSet is the id of runfleet's scale set, once its listener has
// made it.
func (a *actionsService) scaleSet() (int64, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.setID == 0 {
		a.setID, _ = a.ScaleSetID(chaosScaleSet)
	}
	return a.setID, a.setID != 0
}
