package scaleset_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/github/scaleset"
	"github.com/runfleet/runfleet/internal/github/scaleset/scalesettest"
)

// world is a fake Actions service and a client for it.
type world struct {
	fake   *scalesettest.Server
	client *scaleset.Client
	ctx    context.Context
}

func newWorld(t *testing.T, opts scalesettest.Options) *world {
	t.Helper()
	fake := scalesettest.New(t, opts)
	return &world{fake: fake, client: fake.Client(t), ctx: t.Context()}
}

// scaleSet ensures a scale set named name in the default group.
func (w *world) scaleSet(t *testing.T, name string, labels ...string) *scaleset.ScaleSet {
	t.Helper()
	set, err := w.client.EnsureScaleSet(w.ctx, "", scaleset.ScaleSetSpec{Name: name, Labels: labels})
	if err != nil {
		t.Fatalf("EnsureScaleSet(%s): %v", name, err)
	}
	return set
}

// session opens a session on set.
func (w *world) session(t *testing.T, set *scaleset.ScaleSet) *scaleset.MessageSession {
	t.Helper()
	m, err := w.client.CreateSession(w.ctx, set.ID, "test-host")
	if err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	return m
}

// poll gets the next message, failing the test on an error or an empty poll.
func poll(t *testing.T, m *scaleset.MessageSession, last int64) *scaleset.Message {
	t.Helper()
	msg, err := m.GetMessage(t.Context(), last, 10)
	if err != nil {
		t.Fatalf("GetMessage(last=%d): %v", last, err)
	}
	if msg == nil {
		t.Fatalf("GetMessage(last=%d): no message within the poll window", last)
	}
	return msg
}

// wantKind fails unless err is an *scaleset.Error of kind.
func wantKind(t *testing.T, err, kind error) *scaleset.Error {
	t.Helper()
	var e *scaleset.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T): want a *scaleset.Error", err, err)
	}
	if !errors.Is(err, kind) {
		t.Fatalf("error %v: want kind %v", err, kind)
	}
	return e
}

// kinds lists the event types of a message, in order.
func kinds(m *scaleset.Message) []string {
	var out []string
	for _, ev := range m.Events {
		switch e := ev.(type) {
		case *scaleset.JobAvailable:
			out = append(out, "available")
		case *scaleset.JobAssigned:
			out = append(out, "assigned")
		case *scaleset.JobStarted:
			out = append(out, "started")
		case *scaleset.JobCompleted:
			out = append(out, "completed:"+e.Result)
		case *scaleset.UnknownEvent:
			out = append(out, "unknown:"+e.Type)
		}
	}
	return out
}

const shortPoll = 100 * time.Millisecond
