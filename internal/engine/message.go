package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/runfleet/runfleet/internal/github"
)

// MessageVersion is the schema version of queue messages this build writes.
// Readers accept every version up to it; a newer version is rejected as
// malformed so an old worker never misreads a newer message.
const MessageVersion = 1

// Kind says what a worker must do.
type Kind string

const (
	// KindCreate: claim the named pending_create instance and make its
	// runner and machine.
	KindCreate Kind = "create"
	// KindDelete: remove the named instance's runner and machine.
	KindDelete Kind = "delete"
	// KindServeJob: make the job's next instance if it is still open and
	// has none (its pool was full, or the last one ended without serving
	// it). Always safe to repeat: the job ledger's compare-and-set admits
	// one instance at a time.
	KindServeJob Kind = "serve_job"
	// KindRerunJob: ask GitHub to re-run the job (JobKey), which failed
	// because its machine was interrupted, if that is still owed. Safe to
	// repeat: the ledger records each call before it is made (rerun.go).
	KindRerunJob Kind = "rerun_job"
	// KindScaleUp is what builds before the job ledger sent for a job
	// waiting for capacity; it carries the job itself (LegacyJob) and is
	// handled as that job being queued.
	KindScaleUp Kind = "scale_up"
)

// Message is one unit of work on the queue.
type Message struct {
	Version  int    `json:"v"`
	Kind     Kind   `json:"kind"`
	Instance string `json:"instance,omitempty"`
	// JobKey names the job (runner.JobKey) of a serve_job message.
	JobKey string `json:"job_key,omitempty"`
	// Source, EventKey and JobID are carried only so every log line about
	// this work can name the job event (EventMeta) and the job it came
	// from. The key keeps the JSON name of the only key earlier builds
	// carried, the webhook's delivery id; a webhook's event is sent with no
	// source, so its message is what it was.
	Source   EventSource `json:"source,omitempty"`
	EventKey string      `json:"delivery_id,omitempty"`
	JobID    int64       `json:"job_id,omitempty"`
	// Attempt counts re-sends of the same work (delete backoff); on a
	// rerun_job message, it names the failed re-run call it repeats.
	Attempt int `json:"attempt,omitempty"`
	// NotBefore, on a serve_job message, is the job's NextAttemptAt it was
	// sent for: a message finding the job rescheduled since is a stale
	// retry and ends, so one job never has two retry chains.
	NotBefore time.Time `json:"not_before,omitzero"`
	// LegacyJob is set on scale_up messages only.
	LegacyJob *LegacyJob `json:"job,omitempty"`
	// Turn, on a create message, is the place in line GitHub's budget
	// gave the create's JIT registration (createWaits): the create goes
	// in it, before every create that asked after it.
	Turn *github.Turn `json:"turn,omitempty"`
}

// event is the job event the work came from; an empty source is the
// webhook's, or no event at all (work the engine started itself).
func (m Message) event() EventMeta { return EventMeta{Source: m.Source, Key: m.EventKey} }

// withEvent is m with the job event ev named on it.
func (m Message) withEvent(ev EventMeta) Message {
	if ev.Source != SourceWebhook {
		m.Source = ev.Source
	}
	m.EventKey = ev.Key
	return m
}

// LegacyJob is what a scale_up message of an earlier build carries.
type LegacyJob struct {
	Pool           string   `json:"pool"`
	ID             int64    `json:"id"`
	RunAttempt     int64    `json:"run_attempt"`
	Owner          string   `json:"owner"`
	Repository     string   `json:"repository,omitempty"`
	InstallationID int64    `json:"installation_id,omitempty"`
	Labels         []string `json:"labels,omitempty"`
}

// ErrMalformed is matched (errors.Is) by every error DecodeMessage returns
// for a body that can never be processed; such messages must not be retried.
var ErrMalformed = errors.New("malformed queue message")

type malformedError struct{ reason string }

func (e *malformedError) Error() string        { return "malformed queue message: " + e.reason }
func (e *malformedError) Is(target error) bool { return target == ErrMalformed }

// EncodeMessage validates m and returns its JSON form, stamped with
// MessageVersion.
func EncodeMessage(m Message) ([]byte, error) {
	m.Version = MessageVersion
	if err := m.validate(); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// DecodeMessage parses and validates a queue message body.
func DecodeMessage(body []byte) (Message, error) {
	var m Message
	if err := json.Unmarshal(body, &m); err != nil {
		return Message{}, &malformedError{reason: err.Error()}
	}
	if err := m.validate(); err != nil {
		return Message{}, err
	}
	return m, nil
}

func (m Message) validate() error {
	switch {
	case m.Version < 1 || m.Version > MessageVersion:
		return &malformedError{reason: fmt.Sprintf("unsupported version %d", m.Version)}
	case m.Attempt < 0:
		return &malformedError{reason: "negative attempt"}
	}
	switch m.Kind {
	case KindCreate, KindDelete:
		if m.Instance == "" {
			return &malformedError{reason: "no instance name"}
		}
	case KindServeJob, KindRerunJob:
		if m.JobKey == "" {
			return &malformedError{reason: string(m.Kind) + " message without a job key"}
		}
	case KindScaleUp:
		if m.LegacyJob == nil || m.LegacyJob.Pool == "" || m.LegacyJob.ID <= 0 {
			return &malformedError{reason: "scale_up message without a job"}
		}
	default:
		return &malformedError{reason: fmt.Sprintf("unknown kind %q", m.Kind)}
	}
	return nil
}
