// Package events defines what travels on runfleet's work queue and the subset
// of GitHub's workflow_job webhook payload runfleet reads.
package events

import (
	"encoding/json"
	"errors"
	"fmt"
)

// MessageVersion is the schema version of queue messages this build writes.
// Readers accept every version up to it; a newer version is rejected as
// malformed so an old worker never misreads a newer message.
const MessageVersion = 1

// Kind says what a worker must do with an instance.
type Kind string

const (
	KindCreate Kind = "create"
	KindDelete Kind = "delete"
	// KindScaleUp retries a queued job whose pool was at max_runners when it
	// arrived: the job is kept on the queue, never dropped.
	KindScaleUp Kind = "scale_up"
)

// Message is one unit of work on the queue.
type Message struct {
	Version  int    `json:"v"`
	Kind     Kind   `json:"kind"`
	Instance string `json:"instance"`
	// DeliveryID and JobID are carried only so every log line about this work
	// can name the webhook and job it came from.
	DeliveryID string `json:"delivery_id,omitempty"`
	JobID      int64  `json:"job_id,omitempty"`
	// Attempt counts re-sends of the same work (delete backoff).
	Attempt int `json:"attempt,omitempty"`
	// Job is set on scale_up messages only.
	Job *Job `json:"job,omitempty"`
}

// Job is what a scale_up message needs to create the instance for a job.
type Job struct {
	Pool           string   `json:"pool"`
	ID             int64    `json:"id"`
	RunAttempt     int64    `json:"run_attempt"`
	Owner          string   `json:"owner"`
	Repository     string   `json:"repository,omitempty"`
	InstallationID int64    `json:"installation_id,omitempty"`
	Labels         []string `json:"labels,omitempty"`
}

// ErrMalformed is matched (errors.Is) by every error Decode returns for a
// body that can never be processed; such messages must not be retried.
var ErrMalformed = errors.New("malformed queue message")

type malformedError struct{ reason string }

func (e *malformedError) Error() string        { return "malformed queue message: " + e.reason }
func (e *malformedError) Is(target error) bool { return target == ErrMalformed }

// Encode validates m and returns its JSON form, stamped with MessageVersion.
func Encode(m Message) ([]byte, error) {
	m.Version = MessageVersion
	if err := m.validate(); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// Decode parses and validates a queue message body.
func Decode(body []byte) (Message, error) {
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
	case m.Kind != KindCreate && m.Kind != KindDelete && m.Kind != KindScaleUp:
		return &malformedError{reason: fmt.Sprintf("unknown kind %q", m.Kind)}
	case m.Kind == KindScaleUp && (m.Job == nil || m.Job.Pool == "" || m.Job.ID <= 0):
		return &malformedError{reason: "scale_up message without a job"}
	case m.Instance == "":
		return &malformedError{reason: "no instance name"}
	case m.Attempt < 0:
		return &malformedError{reason: "negative attempt"}
	}
	return nil
}
