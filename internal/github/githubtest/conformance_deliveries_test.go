package githubtest_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/runfleet/runfleet/internal/github/githubtest"
)

// exerciseDeliveries makes the delivery log answer: a page with a next
// cursor, the page it points to, one delivery in full, and an unknown one.
func (r *conformanceRig) exerciseDeliveries(app string) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusAccepted) }))
	defer ok.Close()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	defer down.Close()
	r.srv.AddJob(githubtest.Job{ID: 9100, Repo: testRepo, Labels: []string{"self-hosted"}})
	first, err := r.srv.SendWorkflowJob(ok.URL, []byte("s"), 9100, "queued", rigInstallation)
	if err != nil {
		r.t.Fatal(err)
	}
	if _, err := r.srv.SendWorkflowJob(down.URL, []byte("s"), 9100, "completed", rigInstallation); err != nil {
		r.t.Fatal(err)
	}
	now := time.Now()
	jwt := "Bearer " + r.jwt(now.Add(-30*time.Second), now.Add(5*time.Minute), app)
	page := r.call("deliveries page 1", githubtest.RouteAppHookDeliveries, "GET", "/app/hook/deliveries?per_page=1", jwt, nil, 200)
	link := page.header.Get("Link")
	_, after, found := strings.Cut(link, "cursor=")
	cursor, _, _ := strings.Cut(after, ">")
	if !found || !strings.Contains(link, `rel="next"`) {
		r.t.Fatalf("deliveries page 1: Link %q, want a next page with a cursor", link)
	}
	rest := r.call("deliveries page 2", githubtest.RouteAppHookDeliveries, "GET", "/app/hook/deliveries?per_page=1&cursor="+cursor, jwt, nil, 200)
	var items []struct {
		ID int64 `json:"id"`
	}
	if err := json.Unmarshal(rest.body, &items); err != nil || len(items) != 1 || items[0].ID != first.ID || rest.header.Get("Link") != "" {
		r.t.Fatalf("deliveries page 2 = %s (Link %q), want the first delivery alone", rest.body, rest.header.Get("Link"))
	}
	r.call("failed deliveries", githubtest.RouteAppHookDeliveries, "GET", "/app/hook/deliveries?status=failure", jwt, nil, 200)
	r.call("delivery", githubtest.RouteAppHookDelivery, "GET", fmt.Sprintf("/app/hook/deliveries/%d", first.ID), jwt, nil, 200)
	r.call("delivery unknown", githubtest.RouteAppHookDelivery, "GET", "/app/hook/deliveries/1", jwt, nil, 404)
	r.call("deliveries with a token", githubtest.RouteAppHookDeliveries, "GET", "/app/hook/deliveries", r.token, nil, 401)
	r.exerciseHookDeliveries(first.ID)
}

// exerciseHookDeliveries makes an organization's and a repository's
// webhook logs answer, each with the deliveries of its owner's jobs.
func (r *conformanceRig) exerciseHookDeliveries(delivered int64) {
	orgHook, repoHook := r.srv.AddHook(testOrg), r.srv.AddHook(testRepo)
	orgLog := fmt.Sprintf("/orgs/%s/hooks/%d/deliveries", testOrg, orgHook)
	repoLog := fmt.Sprintf("/repos/%s/hooks/%d/deliveries", testRepo, repoHook)
	for _, c := range []struct{ name, route, path string }{
		{"org hook deliveries", githubtest.RouteOrgHookDeliveries, orgLog + "?per_page=1"},
		{"repo hook deliveries", githubtest.RouteRepoHookDeliveries, repoLog},
	} {
		page := r.call(c.name, c.route, "GET", c.path, r.token, nil, 200)
		var items []struct {
			ID int64 `json:"id"`
		}
		if err := json.Unmarshal(page.body, &items); err != nil || len(items) == 0 {
			r.t.Fatalf("%s = %s, want the owner's deliveries", c.name, page.body)
		}
	}
	r.call("org hook delivery", githubtest.RouteOrgHookDelivery, "GET", fmt.Sprintf("%s/%d", orgLog, delivered), r.token, nil, 200)
	r.call("repo hook delivery", githubtest.RouteRepoHookDelivery, "GET", fmt.Sprintf("%s/%d", repoLog, delivered), r.token, nil, 200)
	r.call("org hook unknown", githubtest.RouteOrgHookDeliveries, "GET", fmt.Sprintf("/orgs/%s/hooks/%d/deliveries", testOrg, repoHook), r.token, nil, 404)
	r.call("repo hook delivery unknown", githubtest.RouteRepoHookDelivery, "GET", repoLog+"/1", r.token, nil, 404)
}
