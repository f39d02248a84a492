package listener

import (
	"context"

	"github.com/runfleet/runfleet/internal/github/scaleset"
)

// Session is what a listener asks of a message session
// (*scaleset.MessageSession). It is an interface so that the fault
// simulation can run the real listener against its own Actions service.
type Session interface {
	ID() string
	ScaleSetID() int64
	GetMessage(ctx context.Context, lastMessageID int64, maxCapacity int) (*scaleset.Message, error)
	DeleteMessage(ctx context.Context, messageID int64) error
	AcquireJobs(ctx context.Context, runnerRequestIDs []int64) ([]int64, error)
	// Statistics and HasStatistics are those the session was opened or
	// resumed with.
	Statistics() scaleset.Statistics
	HasStatistics() bool
	Close(ctx context.Context) error
}

var _ Session = (*scaleset.MessageSession)(nil)

// Client is what a listener asks of the scale-set client; ScaleSetClient
// adapts a *scaleset.Client to it.
type Client interface {
	EnsureScaleSet(ctx context.Context, group string, spec scaleset.ScaleSetSpec) (*scaleset.ScaleSet, error)
	CreateSession(ctx context.Context, scaleSetID int64, owner string) (Session, error)
	ResumeSession(ctx context.Context, scaleSetID int64, sessionID string) (Session, error)
}

// ScaleSetClient is c as a listener's Client.
func ScaleSetClient(c *scaleset.Client) Client { return scaleSetClient{c} }

type scaleSetClient struct{ c *scaleset.Client }

func (s scaleSetClient) EnsureScaleSet(ctx context.Context, group string, spec scaleset.ScaleSetSpec) (*scaleset.ScaleSet, error) {
	return s.c.EnsureScaleSet(ctx, group, spec)
}

// CreateSession returns a nil Session, not a nil *MessageSession in one,
// on failure.
func (s scaleSetClient) CreateSession(ctx context.Context, scaleSetID int64, owner string) (Session, error) {
	m, err := s.c.CreateSession(ctx, scaleSetID, owner)
	if err != nil {
		return nil, err
	}
	return m, nil
}

func (s scaleSetClient) ResumeSession(ctx context.Context, scaleSetID int64, sessionID string) (Session, error) {
	m, err := s.c.ResumeSession(ctx, scaleSetID, sessionID)
	if err != nil {
		return nil, err
	}
	return m, nil
}
