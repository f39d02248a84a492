package webhook

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

// WorkflowJobEvent is the part of GitHub's workflow_job webhook payload that
// runfleet reads. Unknown fields are ignored; conclusion is an open string.
type WorkflowJobEvent struct {
	Action       string        `json:"action"`
	WorkflowJob  WorkflowJob   `json:"workflow_job"`
	Repository   *Repository   `json:"repository,omitempty"`
	Organization *Account      `json:"organization,omitempty"`
	Enterprise   *Enterprise   `json:"enterprise,omitempty"`
	Installation *Installation `json:"installation,omitempty"`
}

// WorkflowJob is the job itself. Runner fields are null until a runner takes it.
type WorkflowJob struct {
	ID              int64      `json:"id"`
	RunID           int64      `json:"run_id"`
	RunAttempt      int64      `json:"run_attempt"`
	Status          string     `json:"status"`
	Conclusion      *string    `json:"conclusion"`
	Labels          []string   `json:"labels"`
	RunnerID        *int64     `json:"runner_id"`
	RunnerName      *string    `json:"runner_name"`
	RunnerGroupID   *int64     `json:"runner_group_id"`
	RunnerGroupName *string    `json:"runner_group_name"`
	CreatedAt       *time.Time `json:"created_at"`
	StartedAt       *time.Time `json:"started_at"`
	CompletedAt     *time.Time `json:"completed_at"`
	HTMLURL         string     `json:"html_url"`
}

// Repository is the repository the job runs in.
type Repository struct {
	FullName string   `json:"full_name"`
	Name     string   `json:"name"`
	Owner    *Account `json:"owner,omitempty"`
}

// Account is a user or organization.
type Account struct {
	Login string `json:"login"`
	ID    int64  `json:"id"`
}

// Enterprise is present on enterprise-level deliveries.
type Enterprise struct {
	Slug string `json:"slug"`
	ID   int64  `json:"id"`
}

// Installation is the GitHub App installation that sent the delivery.
type Installation struct {
	ID int64 `json:"id"`
}

// ParseWorkflowJob decodes and checks a workflow_job payload. It returns an
// error naming the first missing or invalid field.
func ParseWorkflowJob(body []byte) (*WorkflowJobEvent, error) {
	var ev WorkflowJobEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return nil, fmt.Errorf("workflow_job payload is not valid JSON: %w", err)
	}
	switch {
	case ev.Action == "":
		return nil, fmt.Errorf("workflow_job payload has no action")
	case ev.WorkflowJob.ID <= 0:
		return nil, fmt.Errorf("workflow_job payload has no workflow_job.id")
	case ev.Repository == nil || ev.Repository.FullName == "":
		return nil, fmt.Errorf("workflow_job payload has no repository.full_name")
	}
	if ev.WorkflowJob.RunAttempt < 1 {
		ev.WorkflowJob.RunAttempt = 1
	}
	return &ev, nil
}

// Runner returns the name of the runner that took the job, or "".
func (j WorkflowJob) Runner() string {
	if j.RunnerName == nil {
		return ""
	}
	return strings.TrimSpace(*j.RunnerName)
}

// JobEvent is the delivery in the engine's words: GitHub's payload stops
// here, at the intake.
func (ev *WorkflowJobEvent) JobEvent() runner.JobEvent {
	job := ev.WorkflowJob
	out := runner.JobEvent{
		Action:     runner.JobAction(ev.Action),
		JobID:      job.ID,
		RunID:      job.RunID,
		RunAttempt: job.RunAttempt,
		Labels:     job.Labels,
		RunnerName: job.Runner(),
	}
	if job.RunnerID != nil {
		out.RunnerID = *job.RunnerID
	}
	if job.Conclusion != nil {
		out.Conclusion = *job.Conclusion
	}
	if job.CompletedAt != nil {
		out.CompletedAt = *job.CompletedAt
	}
	if ev.Repository != nil {
		out.Repository = ev.Repository.FullName
		if ev.Repository.Owner != nil {
			out.Org = ev.Repository.Owner.Login
		}
	}
	if ev.Organization != nil {
		out.Org = ev.Organization.Login
	}
	if ev.Enterprise != nil {
		out.Enterprise = ev.Enterprise.Slug
	}
	if ev.Installation != nil {
		out.InstallationID = ev.Installation.ID
	}
	return out
}
