package githubtest

import (
	"strings"
)

const docsBase = "https://docs.github.com/rest/"

// route is one REST operation the fake serves. pattern is spelled exactly as
// in GitHub's REST description, so the conformance test can look it up.
type route struct {
	spec    string
	method  string
	pattern string
	// docs is the operation's documentation URL, which GitHub returns as
	// documentation_url in its error bodies.
	docs string
	// ownerKind is the owner the path names (org, repo, enterprise) or "".
	ownerKind string
	// appJWT marks routes authenticated by the App's JWT instead of a token.
	appJWT bool
	handle func(s *Server, req *request) reply
	segs   []string
}

// Key is how calls and faults name the route: "METHOD /pattern".
func (rt *route) key() string { return rt.spec }

// The operations the fake serves, as Calls, CallCount and Inject name them:
// "METHOD /pattern", spelled as in GitHub's REST description.
const (
	RouteOrgJITConfig        = "POST /orgs/{org}/actions/runners/generate-jitconfig"
	RouteRepoJITConfig       = "POST /repos/{owner}/{repo}/actions/runners/generate-jitconfig"
	RouteEnterpriseJITConfig = "POST /enterprises/{enterprise}/actions/runners/generate-jitconfig"

	RouteOrgRegistrationToken        = "POST /orgs/{org}/actions/runners/registration-token"
	RouteRepoRegistrationToken       = "POST /repos/{owner}/{repo}/actions/runners/registration-token"
	RouteEnterpriseRegistrationToken = "POST /enterprises/{enterprise}/actions/runners/registration-token"

	RouteOrgRunners        = "GET /orgs/{org}/actions/runners"
	RouteRepoRunners       = "GET /repos/{owner}/{repo}/actions/runners"
	RouteEnterpriseRunners = "GET /enterprises/{enterprise}/actions/runners"

	RouteOrgRunnerDownloads        = "GET /orgs/{org}/actions/runners/downloads"
	RouteRepoRunnerDownloads       = "GET /repos/{owner}/{repo}/actions/runners/downloads"
	RouteEnterpriseRunnerDownloads = "GET /enterprises/{enterprise}/actions/runners/downloads"

	RouteOrgRunner        = "GET /orgs/{org}/actions/runners/{runner_id}"
	RouteRepoRunner       = "GET /repos/{owner}/{repo}/actions/runners/{runner_id}"
	RouteEnterpriseRunner = "GET /enterprises/{enterprise}/actions/runners/{runner_id}"

	RouteOrgRemoveRunner        = "DELETE /orgs/{org}/actions/runners/{runner_id}"
	RouteRepoRemoveRunner       = "DELETE /repos/{owner}/{repo}/actions/runners/{runner_id}"
	RouteEnterpriseRemoveRunner = "DELETE /enterprises/{enterprise}/actions/runners/{runner_id}"

	RouteOrgRunnerGroups        = "GET /orgs/{org}/actions/runner-groups"
	RouteEnterpriseRunnerGroups = "GET /enterprises/{enterprise}/actions/runner-groups"

	RouteWorkflowJob  = "GET /repos/{owner}/{repo}/actions/jobs/{job_id}"
	RouteRerunJob     = "POST /repos/{owner}/{repo}/actions/jobs/{job_id}/rerun"
	RouteRunJobs      = "GET /repos/{owner}/{repo}/actions/runs/{run_id}/jobs"
	RouteAccessTokens = "POST /app/installations/{installation_id}/access_tokens"

	RouteAppHookDeliveries  = "GET /app/hook/deliveries"
	RouteAppHookDelivery    = "GET /app/hook/deliveries/{delivery_id}"
	RouteOrgHookDeliveries  = "GET /orgs/{org}/hooks/{hook_id}/deliveries"
	RouteOrgHookDelivery    = "GET /orgs/{org}/hooks/{hook_id}/deliveries/{delivery_id}"
	RouteRepoHookDeliveries = "GET /repos/{owner}/{repo}/hooks/{hook_id}/deliveries"
	RouteRepoHookDelivery   = "GET /repos/{owner}/{repo}/hooks/{hook_id}/deliveries/{delivery_id}"
	RouteOrgInstallation    = "GET /orgs/{org}/installation"
	RouteRepoInstallation   = "GET /repos/{owner}/{repo}/installation"
)

const (
	runnersDocs = docsBase + "actions/self-hosted-runners#"
	groupsDocs  = docsBase + "actions/self-hosted-runner-groups#"
)

// routes is the table; literal segments come before parameters at the same
// place (generate-jitconfig and downloads before {runner_id}), so they win.
var routes = newRoutes([]*route{
	{spec: RouteOrgJITConfig, ownerKind: kindOrg, docs: runnersDocs + "create-configuration-for-a-just-in-time-runner-for-an-organization", handle: (*Server).handleGenerateJITConfig},
	{spec: RouteRepoJITConfig, ownerKind: kindRepo, docs: runnersDocs + "create-configuration-for-a-just-in-time-runner-for-a-repository", handle: (*Server).handleGenerateJITConfig},
	{spec: RouteEnterpriseJITConfig, ownerKind: kindEnterprise, docs: runnersDocs + "create-configuration-for-a-just-in-time-runner-for-an-enterprise", handle: (*Server).handleGenerateJITConfig},

	{spec: RouteOrgRegistrationToken, ownerKind: kindOrg, docs: runnersDocs + "create-a-registration-token-for-an-organization", handle: (*Server).handleRegistrationToken},
	{spec: RouteRepoRegistrationToken, ownerKind: kindRepo, docs: runnersDocs + "create-a-registration-token-for-a-repository", handle: (*Server).handleRegistrationToken},
	{spec: RouteEnterpriseRegistrationToken, ownerKind: kindEnterprise, docs: runnersDocs + "create-a-registration-token-for-an-enterprise", handle: (*Server).handleRegistrationToken},

	{spec: RouteOrgRunners, ownerKind: kindOrg, docs: runnersDocs + "list-self-hosted-runners-for-an-organization", handle: (*Server).handleListRunners},
	{spec: RouteRepoRunners, ownerKind: kindRepo, docs: runnersDocs + "list-self-hosted-runners-for-a-repository", handle: (*Server).handleListRunners},
	{spec: RouteEnterpriseRunners, ownerKind: kindEnterprise, docs: runnersDocs + "list-self-hosted-runners-for-an-enterprise", handle: (*Server).handleListRunners},

	{spec: RouteOrgRunnerDownloads, ownerKind: kindOrg, docs: runnersDocs + "list-runner-applications-for-an-organization", handle: (*Server).handleListRunnerApplications},
	{spec: RouteRepoRunnerDownloads, ownerKind: kindRepo, docs: runnersDocs + "list-runner-applications-for-a-repository", handle: (*Server).handleListRunnerApplications},
	{spec: RouteEnterpriseRunnerDownloads, ownerKind: kindEnterprise, docs: runnersDocs + "list-runner-applications-for-an-enterprise", handle: (*Server).handleListRunnerApplications},

	{spec: RouteOrgRunner, ownerKind: kindOrg, docs: runnersDocs + "get-a-self-hosted-runner-for-an-organization", handle: (*Server).handleGetRunner},
	{spec: RouteRepoRunner, ownerKind: kindRepo, docs: runnersDocs + "get-a-self-hosted-runner-for-a-repository", handle: (*Server).handleGetRunner},
	{spec: RouteEnterpriseRunner, ownerKind: kindEnterprise, docs: runnersDocs + "get-a-self-hosted-runner-for-an-enterprise", handle: (*Server).handleGetRunner},

	{spec: RouteOrgRemoveRunner, ownerKind: kindOrg, docs: runnersDocs + "delete-a-self-hosted-runner-from-an-organization", handle: (*Server).handleDeleteRunner},
	{spec: RouteRepoRemoveRunner, ownerKind: kindRepo, docs: runnersDocs + "delete-a-self-hosted-runner-from-a-repository", handle: (*Server).handleDeleteRunner},
	{spec: RouteEnterpriseRemoveRunner, ownerKind: kindEnterprise, docs: runnersDocs + "delete-a-self-hosted-runner-from-an-enterprise", handle: (*Server).handleDeleteRunner},

	{spec: RouteOrgRunnerGroups, ownerKind: kindOrg, docs: groupsDocs + "list-self-hosted-runner-groups-for-an-organization", handle: (*Server).handleListRunnerGroups},
	{spec: RouteEnterpriseRunnerGroups, ownerKind: kindEnterprise, docs: groupsDocs + "list-self-hosted-runner-groups-for-an-enterprise", handle: (*Server).handleListRunnerGroups},

	{spec: RouteWorkflowJob, docs: docsBase + "actions/workflow-jobs#get-a-job-for-a-workflow-run", handle: (*Server).handleGetJob},
	{spec: RouteRerunJob, docs: docsBase + "actions/workflow-runs#re-run-a-job-from-a-workflow-run", handle: (*Server).handleRerunJob},
	{spec: RouteRunJobs, docs: docsBase + "actions/workflow-jobs#list-jobs-for-a-workflow-run", handle: (*Server).handleListRunJobs},
	{spec: RouteAccessTokens, appJWT: true, docs: docsBase + "apps/apps#create-an-installation-access-token-for-an-app", handle: (*Server).handleAccessToken},
	{spec: RouteAppHookDeliveries, appJWT: true, docs: docsBase + "apps/webhooks#list-deliveries-for-an-app-webhook", handle: (*Server).handleListDeliveries},
	{spec: RouteAppHookDelivery, appJWT: true, docs: docsBase + "apps/webhooks#get-a-delivery-for-an-app-webhook", handle: (*Server).handleGetDelivery},
	{spec: RouteOrgHookDeliveries, ownerKind: kindOrg, docs: docsBase + "orgs/webhooks#list-deliveries-for-an-organization-webhook", handle: (*Server).handleListHookDeliveries},
	{spec: RouteOrgHookDelivery, ownerKind: kindOrg, docs: docsBase + "orgs/webhooks#get-a-webhook-delivery-for-an-organization-webhook", handle: (*Server).handleGetHookDelivery},
	{spec: RouteRepoHookDeliveries, ownerKind: kindRepo, docs: docsBase + "repos/webhooks#list-deliveries-for-a-repository-webhook", handle: (*Server).handleListHookDeliveries},
	{spec: RouteRepoHookDelivery, ownerKind: kindRepo, docs: docsBase + "repos/webhooks#get-a-delivery-for-a-repository-webhook", handle: (*Server).handleGetHookDelivery},
	{spec: RouteOrgInstallation, ownerKind: kindOrg, appJWT: true, docs: docsBase + "apps/apps#get-an-organization-installation-for-the-authenticated-app", handle: (*Server).handleGetInstallation},
	{spec: RouteRepoInstallation, ownerKind: kindRepo, appJWT: true, docs: docsBase + "apps/apps#get-a-repository-installation-for-the-authenticated-app", handle: (*Server).handleGetInstallation},
})

func newRoutes(rs []*route) []*route {
	for _, rt := range rs {
		rt.method, rt.pattern, _ = strings.Cut(rt.spec, " ")
		rt.segs = splitPath(rt.pattern)
	}
	return rs
}

// Routes lists the operations the fake serves as "METHOD /pattern", with
// patterns spelled as in GitHub's REST description.
func Routes() []string {
	out := make([]string, len(routes))
	for i, rt := range routes {
		out[i] = rt.key()
	}
	return out
}

func splitPath(p string) []string {
	return strings.Split(strings.Trim(p, "/"), "/")
}

func isParam(seg string) bool {
	return strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}")
}

// matchRoute finds the route for a method and API path. pathFound reports a
// path served under another method.
func matchRoute(method, path string) (rt *route, params map[string]string, pathFound bool) {
	segs := splitPath(path)
	for _, candidate := range routes {
		p, ok := matchSegments(candidate.segs, segs)
		if !ok {
			continue
		}
		if candidate.method != method {
			pathFound = true
			continue
		}
		return candidate, p, true
	}
	return nil, nil, pathFound
}

// matchSegments matches a pattern's segments against a path's; literal
// pattern segments must be equal, {param} segments take any non-empty one.
func matchSegments(pattern, path []string) (map[string]string, bool) {
	if len(pattern) != len(path) {
		return nil, false
	}
	params := map[string]string{}
	for i, seg := range pattern {
		switch {
		case isParam(seg) && path[i] != "":
			params[seg[1:len(seg)-1]] = path[i]
		case seg == "*" && path[i] != "":
		case seg != path[i]:
			return nil, false
		}
	}
	return params, true
}
