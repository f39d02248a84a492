package dynamodb

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/testenv"
)

// responseLoser makes the SDK see a retryable failure for a write that the
// server has in fact carried out, once per arm(): the lost-response case the
// SDK's automatic retry turns into a second, conditional, attempt.
type responseLoser struct{ armed atomic.Bool }

func (l *responseLoser) arm() { l.armed.Store(true) }

// errLostResponse is retryable for the SDK's standard retryer.
type errLostResponse struct{}

func (errLostResponse) Error() string        { return "test: response lost after the write succeeded" }
func (errLostResponse) RetryableError() bool { return true }

func (l *responseLoser) install(stack *middleware.Stack) error {
	return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("loseResponse",
		func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleDeserialize(ctx, in)
			switch middleware.GetOperationName(ctx) {
			case "PutItem", "TransactWriteItems":
				if err == nil && l.armed.CompareAndSwap(true, false) {
					return out, md, errLostResponse{}
				}
			}
			return out, md, err
		}), middleware.Before)
}

func TestWriteRetriedAfterLostResponseSucceeds(t *testing.T) {
	ctx := context.Background()
	loser := &responseLoser{}
	client := ddb.NewFromConfig(testenv.DynamoDBConfig(t), func(o *ddb.Options) {
		o.DisableValidateResponseChecksum = true
		o.APIOptions = append(o.APIOptions, loser.install)
	})
	s := newTestStore(t, client)
	requireLost := func(what string) {
		t.Helper()
		if loser.armed.Load() {
			t.Fatalf("%s: no response was lost; the test proves nothing", what)
		}
	}

	inst := testInstance("p", 1)
	loser.arm()
	if err := s.CreateInstance(ctx, store.Admission{Instance: inst, MaxRunners: 10}); err != nil {
		t.Fatalf("create: %v", err)
	}
	requireLost("create")
	if inst.Version != 1 {
		t.Fatalf("Version = %d, want 1", inst.Version)
	}
	requireUsage(t, s, "p", 1)

	next, _ := inst.Transition(runner.StatusCreating, inst.UpdatedAt)
	loser.arm()
	if err := s.UpdateInstance(ctx, runner.StatusPendingCreate, next); err != nil {
		t.Fatalf("update: %v", err)
	}
	requireLost("update")

	deleting := mustMove(t, s, next, runner.StatusPendingDelete, runner.StatusDeleting)
	gone, _ := deleting.Transition(runner.StatusDeleted, deleting.UpdatedAt)
	loser.arm()
	if err := s.UpdateInstance(ctx, runner.StatusDeleting, gone); err != nil {
		t.Fatalf("delete: %v", err)
	}
	requireLost("delete")
	requireUsage(t, s, "p", 0)

	job := testJob("p", 2)
	loser.arm()
	if err := s.CreateJob(ctx, job); err != nil {
		t.Fatalf("create job: %v", err)
	}
	requireLost("create job")
	a := admissionFor(job, runner.JobOpen)
	loser.arm()
	if err := s.CreateInstance(ctx, a); err != nil {
		t.Fatalf("admission with a job: %v", err)
	}
	requireLost("admission with a job")
	if a.Job.Version != 2 {
		t.Fatalf("job Version = %d after the admission, want 2", a.Job.Version)
	}
	served, _ := a.Job.Transition(runner.JobServed, a.Job.UpdatedAt)
	loser.arm()
	if err := s.UpdateJob(ctx, runner.JobOpen, served); err != nil {
		t.Fatalf("update job: %v", err)
	}
	requireLost("update job")
	if got, err := s.GetJob(ctx, job.Key()); err != nil || got.Version != 3 || got.Status != runner.JobServed {
		t.Fatalf("GetJob = %+v, %v; want served at version 3", got, err)
	}
}

// An identical write by a rival is still a lost race: success is decided by
// the write's own id, never by equal content.
func TestIdenticalRivalWriteIsConflict(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t, testenv.DynamoDB(t))
	inst := testInstance("p", 1)
	mustCreate(t, s, inst)
	next, _ := inst.Transition(runner.StatusCreating, inst.UpdatedAt)
	rival := next.Clone()
	if err := s.UpdateInstance(ctx, runner.StatusPendingCreate, rival); err != nil {
		t.Fatal(err)
	}
	err := s.UpdateInstance(ctx, runner.StatusPendingCreate, next)
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("second identical write: got %v, want a conflict", err)
	}
	if err := s.CreateInstance(ctx, store.Admission{Instance: testInstance("p", 1), MaxRunners: 10}); !errors.Is(err, store.ErrAlreadyExists) {
		t.Fatalf("identical create: got %v, want ErrAlreadyExists", err)
	}

	job := testJob("p", 2)
	mustCreateJob(t, s, job)
	waiting, _ := job.Transition(runner.JobWaiting, job.UpdatedAt)
	if err := s.UpdateJob(ctx, runner.JobOpen, waiting.Clone()); err != nil {
		t.Fatal(err)
	}
	var conflict *store.ConflictError
	if err := s.UpdateJob(ctx, runner.JobOpen, waiting); !errors.As(err, &conflict) {
		t.Fatalf("second identical job write: got %v, want a *ConflictError", err)
	}
	if err := s.CreateJob(ctx, testJob("p", 2)); !errors.Is(err, store.ErrJobExists) {
		t.Fatalf("identical job create: got %v, want ErrJobExists", err)
	}
}
