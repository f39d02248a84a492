// Package runner is runfleet's domain: the job that wants a runner (Job,
// demand: the ledger), the instance made for it (Instance, supply), the
// pool that serves it (Pool, policy: owner, labels, limits, shapes, spot
// breaker), their statuses and the tables of legal transitions between
// them. It imports nothing from AWS, HTTP or GitHub so every adapter and
// use case can share it.
package runner

import (
	"fmt"
	"strings"
)

// Status is the lifecycle state of an instance (the machine and its record).
// The names are GARM's so GARM providers and operators feel at home.
type Status string

const (
	StatusPendingCreate      Status = "pending_create"
	StatusCreating           Status = "creating"
	StatusRunning            Status = "running"
	StatusStopped            Status = "stopped"
	StatusError              Status = "error"
	StatusPendingDelete      Status = "pending_delete"
	StatusPendingForceDelete Status = "pending_force_delete"
	StatusDeleting           Status = "deleting"
	StatusDeleted            Status = "deleted"
	StatusUnknown            Status = "unknown"
)

// AllStatuses lists every instance status, in lifecycle order.
var AllStatuses = []Status{
	StatusPendingCreate, StatusCreating, StatusRunning, StatusStopped, StatusError,
	StatusPendingDelete, StatusPendingForceDelete, StatusDeleting, StatusDeleted, StatusUnknown,
}

// Valid reports whether s is one of the known statuses.
func (s Status) Valid() bool {
	for _, known := range AllStatuses {
		if s == known {
			return true
		}
	}
	return false
}

// Live reports whether an instance in status s still holds capacity and may
// still exist somewhere (in GitHub, at the provider). Only deleted is not live.
func (s Status) Live() bool { return s != StatusDeleted }

// PendingDeletion reports whether s asks a worker to delete the instance.
func (s Status) PendingDeletion() bool {
	return s == StatusPendingDelete || s == StatusPendingForceDelete
}

// RunnerStatus is the state of the runner agent as GitHub sees it.
type RunnerStatus string

const (
	RunnerPending    RunnerStatus = "pending"
	RunnerInstalling RunnerStatus = "installing"
	RunnerIdle       RunnerStatus = "idle"
	RunnerActive     RunnerStatus = "active"
	RunnerOffline    RunnerStatus = "offline"
	RunnerFailed     RunnerStatus = "failed"
	RunnerTerminated RunnerStatus = "terminated"
)

// AllRunnerStatuses lists every runner status.
var AllRunnerStatuses = []RunnerStatus{
	RunnerPending, RunnerInstalling, RunnerIdle, RunnerActive, RunnerOffline, RunnerFailed, RunnerTerminated,
}

// Valid reports whether r is one of the known runner statuses.
func (r RunnerStatus) Valid() bool {
	for _, known := range AllRunnerStatuses {
		if r == known {
			return true
		}
	}
	return false
}

// ParseStatuses reads a comma-separated list of status names (blanks
// skipped), as an operator types it; a name that is no status is an
// *UnknownStatusError.
func ParseStatuses(list string) ([]Status, error) {
	var out []Status
	for name := range strings.SplitSeq(list, ",") {
		s := Status(strings.TrimSpace(name))
		switch {
		case s == "":
			continue
		case !s.Valid():
			return nil, &UnknownStatusError{Name: string(s)}
		}
		out = append(out, s)
	}
	return out, nil
}

// UnknownStatusError is a status name that is not one.
type UnknownStatusError struct{ Name string }

func (e *UnknownStatusError) Error() string {
	names := make([]string, len(AllStatuses))
	for i, s := range AllStatuses {
		names[i] = string(s)
	}
	return fmt.Sprintf("%q is not an instance status (want one of %s)", e.Name, strings.Join(names, ", "))
}
