package main

import "time"

// jobState is where a job stands in the GitHub the driver plays.
type jobState int

const (
	jobPending jobState = iota // not queued yet
	jobQueued
	jobRunning
	jobDone
)

// job is one workflow job, from GitHub's side.
type job struct {
	id       int64
	arriveAt time.Duration
	runFor   time.Duration
	// GitHub sometimes never delivers an event at all.
	loseInProgress, loseCompleted bool
	delivery                      [3]string // queued, in_progress, completed

	state jobState
	// served counts the runners of ours that took the job.
	served     int
	runner     string
	providerID string
	startedAt  time.Time
	finishAt   time.Time
	// interrupted: the machine running the job was deleted before the job
	// finished — runfleet destroyed a busy runner.
	interrupted bool

	// With a scale set (-intake scaleset): the job's runner request id in
	// the Actions service, how many more times GitHub takes back its
	// assignment while no runner has taken it, and since when it is
	// assigned.
	requestID    int64
	reassignLeft int
	assignedAt   time.Time
	// cancelAfter: GitHub cancels the job for good this long after its
	// assignment if no runner took it by then (0: never); canceledAt is
	// when it did.
	cancelAfter time.Duration
	canceledAt  time.Time
}

// Delivery indexes into job.delivery.
const (
	deliverQueued = iota
	deliverInProgress
	deliverCompleted
)
