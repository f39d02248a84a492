package scalesettest

import (
	"fmt"
	"time"
)

type group struct {
	id        int64
	name      string
	isDefault bool
}

type label struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

type scaleSet struct {
	id, groupID   int64
	name          string
	labels        []label
	disableUpdate bool
	created       time.Time
	queue         []*queued
	nextMessageID int64
}

// queued is one message in a scale set's queue: a batch of job messages.
type queued struct {
	id         int64
	events     []map[string]any
	acked      bool
	deliveries int
}

type session struct {
	id, owner   string
	setID       int64
	queueToken  string
	tokenIssued time.Time
	lastActive  time.Time
}

type runnerRecord struct {
	id    int64
	name  string
	setID int64
	busy  bool
}

// Job states as the fake tracks them.
const (
	jobAvailable = "available"
	jobAssigned  = "assigned"
	jobRunning   = "running"
	jobDone      = "completed"
)

type job struct {
	requestID     int64
	setID         int64
	state         string
	reassignments int
	runnerID      int64
	runnerName    string
	repo          string
	labels        []string
	runID         int64
	jobID         string
	queued        time.Time
	// assigned is when GitHub last assigned the job to its scale set (its
	// messages' scaleSetAssignTime); zero while only available.
	assigned time.Time
}

// AddRunnerGroup adds a runner group and returns its id.
func (s *Server) AddRunnerGroup(name string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addGroupLocked(name, false)
}

func (s *Server) addGroupLocked(name string, isDefault bool) int64 {
	id := s.nextLocked()
	s.groups[id] = &group{id: id, name: name, isDefault: isDefault}
	return id
}

// ScaleSetLabels returns a scale set's label names, or nil when it does
// not exist.
func (s *Server) ScaleSetLabels(id int64) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sets[id]
	if ss == nil {
		return nil
	}
	var out []string
	for _, l := range ss.labels {
		out = append(out, l.Name)
	}
	return out
}

// HasScaleSet reports whether the scale set exists.
func (s *Server) HasScaleSet(id int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sets[id] != nil
}

// SessionOwner returns the owner of the scale set's session, "" if none.
func (s *Server) SessionOwner(setID int64) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss := s.sessionOfLocked(setID); ss != nil {
		return ss.owner
	}
	return ""
}

func (s *Server) sessionOfLocked(setID int64) *session {
	for _, ss := range s.sessions {
		if ss.setID == setID {
			return ss
		}
	}
	return nil
}

// liveLocked says whether a session still holds its scale set.
func (s *Server) liveLocked(ss *session) bool {
	return s.nowLocked().Sub(ss.lastActive) < s.opts.SessionTTL
}

// statisticsLocked counts a scale set's jobs and runners as GitHub's
// statistics do: assigned counts jobs waiting for a runner and running.
func (s *Server) statisticsLocked(setID int64) map[string]int {
	st := map[string]int{
		"totalAvailableJobs": 0, "totalAcquiredJobs": 0, "totalAssignedJobs": 0, "totalRunningJobs": 0,
		"totalRegisteredRunners": 0, "totalBusyRunners": 0, "totalIdleRunners": 0,
	}
	for _, j := range s.jobs {
		if j.setID != setID {
			continue
		}
		switch j.state {
		case jobAvailable:
			st["totalAvailableJobs"]++
		case jobAssigned:
			st["totalAssignedJobs"]++
		case jobRunning:
			st["totalAssignedJobs"]++
			st["totalRunningJobs"]++
		}
	}
	for _, r := range s.runners {
		if r.setID != setID {
			continue
		}
		st["totalRegisteredRunners"]++
		if r.busy {
			st["totalBusyRunners"]++
		} else {
			st["totalIdleRunners"]++
		}
	}
	return st
}

// wireScaleSetLocked is a scale set as the service answers it.
func (s *Server) wireScaleSetLocked(ss *scaleSet) map[string]any {
	groupName := ""
	if g := s.groups[ss.groupID]; g != nil {
		groupName = g.name
	}
	return map[string]any{
		"id": ss.id, "name": ss.name, "runnerGroupId": ss.groupID, "runnerGroupName": groupName,
		"labels": ss.labels, "RunnerSetting": map[string]bool{"disableUpdate": ss.disableUpdate},
		"createdOn":          ss.created.UTC().Format(time.RFC3339Nano),
		"runnerJitConfigUrl": fmt.Sprintf("%s_apis/runtime/runnerscalesets/%d/generatejitconfig", s.ServiceURL(), ss.id),
		"statistics":         s.statisticsLocked(ss.id),
	}
}

// wireSessionLocked is a session as create and refresh answer it.
func (s *Server) wireSessionLocked(ss *session) map[string]any {
	out := map[string]any{
		"sessionId": ss.id, "ownerName": ss.owner,
		"messageQueueUrl":         s.http.URL + "/broker/message",
		"messageQueueAccessToken": ss.queueToken,
		"statistics":              s.statisticsLocked(ss.setID),
	}
	if set := s.sets[ss.setID]; set != nil {
		out["runnerScaleSet"] = s.wireScaleSetLocked(set)
	}
	if s.emptyQueueURLs > 0 {
		s.emptyQueueURLs--
		out["messageQueueUrl"] = ""
	}
	return out
}
