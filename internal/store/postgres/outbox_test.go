package postgres_test

import (
	"context"
	"testing"

	"github.com/runfleet/runfleet/internal/queue"
	pgqueue "github.com/runfleet/runfleet/internal/queue/postgres"
	"github.com/runfleet/runfleet/internal/store/postgres"
	"github.com/runfleet/runfleet/internal/store/postgres/pgtest"
	"github.com/runfleet/runfleet/internal/store/storetest"
)

func openQueued(t *testing.T, dsn string) *postgres.QueuedStore {
	t.Helper()
	s, err := postgres.OpenWithQueue(context.Background(), dsn, pgqueue.Options{})
	if err != nil {
		t.Fatalf("OpenWithQueue: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestOutboxContract(t *testing.T) {
	storetest.RunOutbox(t, func(t *testing.T) (storetest.OutboxStore, queue.Queue) {
		s := openQueued(t, pgtest.NewSchema(t))
		return s, s.Queue()
	})
}
