package scaleset

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Statistics are the scale set's counters as GitHub sees them, sent with
// every message and session. Scale on TotalAssignedJobs (jobs waiting for
// or running on this scale set's runners), never on message counts.
type Statistics struct {
	TotalAvailableJobs     int `json:"totalAvailableJobs"`
	TotalAcquiredJobs      int `json:"totalAcquiredJobs"`
	TotalAssignedJobs      int `json:"totalAssignedJobs"`
	TotalRunningJobs       int `json:"totalRunningJobs"`
	TotalRegisteredRunners int `json:"totalRegisteredRunners"`
	TotalBusyRunners       int `json:"totalBusyRunners"`
	TotalIdleRunners       int `json:"totalIdleRunners"`
}

// JobMessagesType is the outer type of a message carrying job messages.
const JobMessagesType = "RunnerScaleSetJobMessages"

// Message is one delivery from the message queue: up to 50 job messages,
// in the order GitHub sent them, and the statistics at that moment.
type Message struct {
	ID         int64
	Type       string // JobMessagesType, or a type this client does not know
	Statistics Statistics
	Events     []Event
	// Malformed is set when the body could not be read as job messages
	// (Events is then empty): the ID and Statistics are still GitHub's.
	// A listener logs it and may acknowledge: statistics reconcile demand.
	Malformed error
}

// Event is one job message: *JobAvailable, *JobAssigned, *JobStarted,
// *JobCompleted, or *UnknownEvent for a type this client does not know.
type Event interface {
	// Job is the job the message is about (zero for an UnknownEvent).
	Job() JobRef
}

// JobRef is what every job message carries. RunnerRequestID identifies
// the request for a runner and is the key to deduplicate on; JobID is a
// GUID, not the REST API's workflow job id.
type JobRef struct {
	RunnerRequestID    int64     `json:"runnerRequestId"`
	RepositoryName     string    `json:"repositoryName"`
	OwnerName          string    `json:"ownerName"`
	JobID              string    `json:"jobId"`
	JobWorkflowRef     string    `json:"jobWorkflowRef"`
	JobDisplayName     string    `json:"jobDisplayName"`
	WorkflowRunID      int64     `json:"workflowRunId"`
	EventName          string    `json:"eventName"`
	RequestLabels      []string  `json:"requestLabels"`
	QueueTime          Timestamp `json:"queueTime"`
	ScaleSetAssignTime Timestamp `json:"scaleSetAssignTime"`
	RunnerAssignTime   Timestamp `json:"runnerAssignTime"`
	FinishTime         Timestamp `json:"finishTime"`
}

// Job returns the ref itself, so every job message is an Event.
func (j JobRef) Job() JobRef { return j }

// JobAvailable: a job this scale set may acquire (GHES, and the legacy
// flow): acquire it with MessageSession.AcquireJobs to have it assigned.
type JobAvailable struct {
	JobRef
	AcquireJobURL string `json:"acquireJobUrl"`
}

// JobAssigned: GitHub assigned the job to this scale set; it waits for a
// runner of this scale set.
type JobAssigned struct{ JobRef }

// JobStarted: a runner of this scale set took the job.
type JobStarted struct {
	JobRef
	RunnerID   int64  `json:"runnerId"`
	RunnerName string `json:"runnerName"`
}

// Job results GitHub reports in JobCompleted. Result is an open set.
const (
	ResultSucceeded = "succeeded"
	ResultFailed    = "failed"
	ResultCanceled  = "canceled"
)

// JobCompleted: the job finished, or (Result canceled, no runner) GitHub
// took back an assignment no runner took in time and will assign the job
// again — up to three times.
type JobCompleted struct {
	JobRef
	Result     string `json:"result"`
	RunnerID   int64  `json:"runnerId"`
	RunnerName string `json:"runnerName"`
}

// UnknownEvent keeps a job message this client cannot read: its type is
// new, or its fields did not decode (Err).
type UnknownEvent struct {
	Type string
	Raw  json.RawMessage
	Err  error
}

// Job is zero: nothing is known about the job.
func (*UnknownEvent) Job() JobRef { return JobRef{} }

// wireMessage is the queue's answer; Body is a JSON array in a string.
type wireMessage struct {
	MessageID   int64       `json:"messageId"`
	MessageType string      `json:"messageType"`
	Body        string      `json:"body"`
	Statistics  *Statistics `json:"statistics"`
}

func (w *wireMessage) message() *Message {
	m := &Message{ID: w.MessageID, Type: w.MessageType}
	if w.Statistics != nil {
		m.Statistics = *w.Statistics
	}
	if w.MessageType != JobMessagesType {
		m.Malformed = fmt.Errorf("message type %q is not %q", w.MessageType, JobMessagesType)
		return m
	}
	if strings.TrimSpace(w.Body) == "" {
		return m
	}
	var raws []json.RawMessage
	if err := json.Unmarshal([]byte(w.Body), &raws); err != nil {
		m.Malformed = fmt.Errorf("the body is not a JSON array of job messages: %w", err)
		return m
	}
	for _, raw := range raws {
		m.Events = append(m.Events, decodeEvent(raw))
	}
	return m
}

// decodeEvent reads one job message by its messageType.
func decodeEvent(raw json.RawMessage) Event {
	var head struct {
		MessageType string `json:"messageType"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return &UnknownEvent{Raw: raw, Err: err}
	}
	var ev Event
	switch head.MessageType {
	case "JobAvailable":
		ev = &JobAvailable{}
	case "JobAssigned":
		ev = &JobAssigned{}
	case "JobStarted":
		ev = &JobStarted{}
	case "JobCompleted":
		ev = &JobCompleted{}
	default:
		return &UnknownEvent{Type: head.MessageType, Raw: raw}
	}
	if err := json.Unmarshal(raw, ev); err != nil {
		return &UnknownEvent{Type: head.MessageType, Raw: raw, Err: err}
	}
	return ev
}

// Timestamp is a time the service sent. It reads RFC 3339, .NET's form
// without a zone (as UTC), and null or "" (zero), so that one odd
// timestamp cannot make a job message unreadable.
type Timestamp struct{ time.Time }

func (t *Timestamp) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "" || s == "null" {
		t.Time = time.Time{}
		return nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999"} {
		if at, err := time.Parse(layout, s); err == nil {
			t.Time = at
			return nil
		}
	}
	return fmt.Errorf("unreadable time %q", s)
}
