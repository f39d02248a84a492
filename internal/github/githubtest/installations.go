package githubtest

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// installationEpoch is when every installation of the fake was made.
var installationEpoch = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

// handleGetInstallation answers, as the App, which installation covers the
// organization or repository the path names: the one on its account, else
// one on every owner. An owner none covers is 404, as GitHub answers.
func (s *Server) handleGetInstallation(req *request) reply {
	o := s.owner(req)
	inst := s.installationOn(o.account(), req.who)
	if inst == nil {
		return errorReply(http.StatusNotFound, "Not Found", req.route.docs)
	}
	return jsonReply(http.StatusOK, s.installationJSON(req, inst, o.account()))
}

// installationOn is the installation of the App who authenticated as on
// account, else one on every owner, else nil; the lowest id wins a tie.
func (s *Server) installationOn(account string, who *identity) *installation {
	ids := make([]int64, 0, len(s.installations))
	for id := range s.installations {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var everywhere *installation
	for _, id := range ids {
		inst := s.installations[id]
		if !s.installedBy(inst, who) {
			continue
		}
		if strings.EqualFold(inst.account, account) {
			return inst
		}
		if inst.account == "" && everywhere == nil {
			everywhere = inst
		}
	}
	return everywhere
}

// installationJSON is GitHub's "installation" schema for inst, on account.
func (s *Server) installationJSON(req *request, inst *installation, account string) map[string]any {
	id := strconv.FormatInt(inst.id, 10)
	created := installationEpoch.Format(time.RFC3339)
	suspendedAt, suspendedBy := suspendedJSON(req, inst)
	return map[string]any{
		"id": inst.id, "app_id": s.appOf(inst), "app_slug": "runfleet-test",
		"target_id": accountID(account), "target_type": "Organization",
		"single_file_name": nil, "repository_selection": "all",
		"access_tokens_url": req.apiBase + "/app/installations/" + id + "/access_tokens",
		"repositories_url":  req.apiBase + "/installation/repositories",
		"html_url":          "https://github.com/organizations/" + account + "/settings/installations/" + id,
		"events":            []string{"workflow_job"},
		"account":           simpleUser(req, account, "Organization"),
		"permissions":       installationPermissions,
		"created_at":        created, "updated_at": created,
		"suspended_by": suspendedBy, "suspended_at": suspendedAt,
	}
}

// installationPermissions are what runfleet's App asks for.
var installationPermissions = map[string]string{
	"actions": "write", "administration": "write", "metadata": "read", "organization_self_hosted_runners": "write",
}

// accountID is a stable id for a login.
func accountID(login string) int64 {
	var h int64 = 7
	for _, r := range strings.ToLower(login) {
		h = (h*31 + int64(r)) % 1_000_000_007
	}
	return h + 1
}

// simpleUser is GitHub's "simple-user" schema for login.
func simpleUser(req *request, login, kind string) map[string]any {
	api := req.apiBase + "/users/" + login
	return map[string]any{
		"login": login, "id": accountID(login), "node_id": fmt.Sprintf("O_%d", accountID(login)),
		"avatar_url": "https://avatars.githubusercontent.com/u/" + strconv.FormatInt(accountID(login), 10), "gravatar_id": "",
		"url": api, "html_url": "https://github.com/" + login,
		"followers_url": api + "/followers", "following_url": api + "/following{/other_user}",
		"gists_url": api + "/gists{/gist_id}", "starred_url": api + "/starred{/owner}{/repo}",
		"subscriptions_url": api + "/subscriptions", "organizations_url": api + "/orgs",
		"repos_url": api + "/repos", "events_url": api + "/events{/privacy}",
		"received_events_url": api + "/received_events", "type": kind, "site_admin": false,
	}
}
