package scalesettest

import (
	"fmt"
	"strings"
	"time"
)

// JobSpec describes a job queued for a scale set.
type JobSpec struct {
	Repository    string // "org/repo"
	Labels        []string
	WorkflowRunID int64
	DisplayName   string
}

// MaxReassignments is how often GitHub takes back an assignment no runner
// took and assigns the job again ("up to 3 times").
const MaxReassignments = 3

// QueueJob queues a job for the scale set and returns its runner request
// id. It arrives as JobAssigned, or as JobAvailable when the fake was
// started with AcquireRequired.
func (s *Server) QueueJob(setID int64, spec JobSpec) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	set := s.sets[setID]
	if set == nil {
		s.t.Fatalf("scalesettest: QueueJob: no scale set %d", setID)
		return 0
	}
	j := &job{
		requestID: s.nextLocked(), setID: setID, state: jobAssigned, repo: spec.Repository,
		labels: spec.Labels, runID: spec.WorkflowRunID, queued: s.nowLocked(),
		jobID: fmt.Sprintf("00000000-0000-4000-8000-%012d", s.seq),
	}
	kind := "JobAssigned"
	if s.opts.AcquireRequired {
		j.state, kind = jobAvailable, "JobAvailable"
	} else {
		j.assigned = j.queued
	}
	s.jobs[j.requestID] = j
	s.enqueueLocked(set, s.eventLocked(j, kind, nil))
	return j.requestID
}

// StartJob has the named runner take the job: JobStarted, and the runner
// is busy until CompleteJob.
func (s *Server) StartJob(requestID int64, runnerName string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, set, err := s.jobLocked(requestID)
	if err != nil {
		return err
	}
	var rr *runnerRecord
	for _, r := range s.runners {
		if r.name == runnerName && r.setID == j.setID {
			rr = r
		}
	}
	if rr == nil {
		return fmt.Errorf("scalesettest: no runner %q in scale set %d", runnerName, j.setID)
	}
	rr.busy = true
	j.state, j.runnerID, j.runnerName = jobRunning, rr.id, rr.name
	s.enqueueLocked(set, s.eventLocked(j, "JobStarted", map[string]any{"runnerId": rr.id, "runnerName": rr.name}))
	return nil
}

// CompleteJob finishes the job with result (succeeded, failed, canceled).
func (s *Server) CompleteJob(requestID int64, result string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, set, err := s.jobLocked(requestID)
	if err != nil {
		return err
	}
	if rr := s.runners[j.runnerID]; rr != nil {
		rr.busy = false
	}
	j.state = jobDone
	s.enqueueLocked(set, s.eventLocked(j, "JobCompleted", map[string]any{
		"result": result, "runnerId": j.runnerID, "runnerName": j.runnerName,
	}))
	return nil
}

// CancelAssignment plays GitHub taking back an assignment no runner took
// in time: JobCompleted (result canceled, no runner), then JobAssigned
// again. It works MaxReassignments times per job, then returns false.
func (s *Server) CancelAssignment(requestID int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, set, err := s.jobLocked(requestID)
	if err != nil || j.state != jobAssigned || j.reassignments >= MaxReassignments {
		return false
	}
	j.reassignments++
	s.enqueueLocked(set, s.eventLocked(j, "JobCompleted", map[string]any{"result": "canceled", "runnerId": 0, "runnerName": ""}))
	j.assigned = s.nowLocked()
	s.enqueueLocked(set, s.eventLocked(j, "JobAssigned", nil))
	return true
}

// CancelJob plays a job canceled for good (a user's cancel, or the 24 h
// limit) while assigned or available and not yet taken by a runner:
// JobCompleted, result canceled, no runner — the same message as a taken
// back assignment, and no JobAssigned after it. It returns false for a
// job a runner took or that is done.
func (s *Server) CancelJob(requestID int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, set, err := s.jobLocked(requestID)
	if err != nil || j.state != jobAssigned && j.state != jobAvailable {
		return false
	}
	j.state = jobDone
	s.enqueueLocked(set, s.eventLocked(j, "JobCompleted", map[string]any{"result": "canceled", "runnerId": 0, "runnerName": ""}))
	return true
}

// DeliverLate makes the scale set's message messageID, delivered before
// and maybe acknowledged, come again on the next poll, whatever
// lastMessageId says: the broker redelivering a message late, after later
// messages, after its acknowledgement, after the job it speaks of was
// canceled or completed. It returns false for a message never queued.
func (s *Server) DeliverLate(setID, messageID int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	set := s.sets[setID]
	if set == nil {
		return false
	}
	for _, q := range set.queue {
		if q.id == messageID && q.deliveries > 0 {
			s.redeliver = q
			s.notifyLocked()
			return true
		}
	}
	return false
}

// MessagesAbout lists the ids of the scale set's messages, delivered or
// not, that carry an event of kind (JobAssigned, JobAvailable …) about
// the job, oldest first: what a test redelivers late.
func (s *Server) MessagesAbout(setID, requestID int64, kind string) []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []int64
	if set := s.sets[setID]; set != nil {
		for _, q := range set.queue {
			for _, ev := range q.events {
				if ev["messageType"] == kind && ev["runnerRequestId"] == requestID {
					ids = append(ids, q.id)
					break
				}
			}
		}
	}
	return ids
}

func (s *Server) jobLocked(requestID int64) (*job, *scaleSet, error) {
	j := s.jobs[requestID]
	if j == nil {
		return nil, nil, fmt.Errorf("scalesettest: no job %d", requestID)
	}
	set := s.sets[j.setID]
	if set == nil {
		return nil, nil, fmt.Errorf("scalesettest: job %d's scale set %d is gone", requestID, j.setID)
	}
	return j, set, nil
}

// eventLocked is one job message as the service writes it.
func (s *Server) eventLocked(j *job, kind string, extra map[string]any) map[string]any {
	// GitHub names the owner's login and the repository's own name apart.
	org, repo, ok := strings.Cut(j.repo, "/")
	if !ok {
		org, repo = s.opts.Owner.Org, j.repo
	}
	ev := map[string]any{
		"messageType": kind, "runnerRequestId": j.requestID, "repositoryName": repo, "ownerName": org,
		"jobId": j.jobID, "jobWorkflowRef": j.repo + "/.github/workflows/ci.yml@refs/heads/main",
		"jobDisplayName": "build", "workflowRunId": j.runID, "eventName": "push", "requestLabels": j.labels,
		"queueTime": j.queued.UTC().Format(time.RFC3339Nano),
		// The assignment the message is about, so that a copy delivered
		// late still names the assignment it was written for.
		"scaleSetAssignTime": dotNetTime(j.assigned),
		// guess: an unset time as .NET writes its default, without a zone.
		"runnerAssignTime": "0001-01-01T00:00:00",
		"finishTime":       nil,
	}
	if kind == "JobAvailable" {
		ev["acquireJobUrl"] = fmt.Sprintf("%s_apis/runtime/runnerscalesets/%d/acquirejobs", s.ServiceURL(), j.setID)
	}
	for k, v := range extra {
		ev[k] = v
	}
	return ev
}

// dotNetTime is a time as the service writes it: RFC 3339, and an unset
// one as .NET's default, without a zone (a guess, as runnerAssignTime).
func dotNetTime(at time.Time) string {
	if at.IsZero() {
		return "0001-01-01T00:00:00"
	}
	return at.UTC().Format(time.RFC3339Nano)
}

// enqueueLocked adds a job message to the scale set's queue: to the last
// message while it was never delivered and has room (a delivery holds up
// to MaxBatch), else as a new message.
func (s *Server) enqueueLocked(set *scaleSet, ev map[string]any) {
	if n := len(set.queue); n > 0 {
		last := set.queue[n-1]
		if last.deliveries == 0 && !last.acked && len(last.events) < s.opts.MaxBatch {
			last.events = append(last.events, ev)
			s.notifyLocked()
			return
		}
	}
	set.nextMessageID++
	set.queue = append(set.queue, &queued{id: set.nextMessageID, events: []map[string]any{ev}})
	s.notifyLocked()
}

// Unacknowledged is how many of the scale set's messages were never
// acknowledged.
func (s *Server) Unacknowledged(setID int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	if set := s.sets[setID]; set != nil {
		for _, q := range set.queue {
			if !q.acked {
				n++
			}
		}
	}
	return n
}

// Deliveries is how often a message was delivered.
func (s *Server) Deliveries(setID, messageID int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if set := s.sets[setID]; set != nil {
		for _, q := range set.queue {
			if q.id == messageID {
				return q.deliveries
			}
		}
	}
	return 0
}

// AssignedJobs is the scale set's totalAssignedJobs now.
func (s *Server) AssignedJobs(setID int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.statisticsLocked(setID)["totalAssignedJobs"]
}
