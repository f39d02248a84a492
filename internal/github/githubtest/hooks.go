package githubtest

import (
	"net/http"
	"strconv"
	"strings"
)

// AddHook registers a webhook on an owner added before ("org" or
// "owner/repo") and returns its id. The fake has one webhook sender
// (SendWorkflowJob): every delivery it logs is listed in the App's log
// and in the log of each webhook whose owner covers the job's repository
// — an organization's webhook every repository of it, a repository's
// webhook its own — as if each had sent it.
func (s *Server) AddHook(owner string) int64 {
	kind := kindOrg
	if strings.Contains(owner, "/") {
		kind = kindRepo
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.owners[ownerIndex(owner)]; !ok {
		s.t.Errorf("githubtest: AddHook(%q): add the %s first", owner, kind)
		return 0
	}
	if s.hooks == nil {
		s.hooks = map[int64]string{}
	}
	id := int64(400_000 + len(s.hooks) + 1)
	s.hooks[id] = ownerIndex(owner)
	return id
}

// handleListHookDeliveries serves GET /orgs/{org}/hooks/{hook_id}/deliveries
// and the repository's: as the App's log, the attempts of the hook's owner.
func (s *Server) handleListHookDeliveries(req *request) reply {
	inLog, ok := s.hookLog(req)
	if !ok {
		return errorReply(http.StatusNotFound, "Not Found", req.route.docs)
	}
	return s.listDeliveries(req, inLog)
}

// handleGetHookDelivery serves one attempt of a hook's log.
func (s *Server) handleGetHookDelivery(req *request) reply {
	inLog, ok := s.hookLog(req)
	if !ok {
		return errorReply(http.StatusNotFound, "Not Found", req.route.docs)
	}
	return s.getDelivery(req, inLog)
}

// hookLog says which attempts the request's hook logs; false when the
// owner has no such hook (GitHub answers 404, as for a hook the
// credential may not see).
func (s *Server) hookLog(req *request) (func(*Delivery) bool, bool) {
	id, err := strconv.ParseInt(req.params["hook_id"], 10, 64)
	key := ownerIndex(ownerKey(req.route.ownerKind, req.params))
	if err != nil || s.hooks[id] != key {
		return nil, false
	}
	return func(d *Delivery) bool {
		repo := strings.ToLower(d.repo)
		if req.route.ownerKind == kindRepo {
			return repo == key
		}
		return strings.HasPrefix(repo, key+"/")
	}, true
}
