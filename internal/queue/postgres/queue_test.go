package postgres_test

import (
	"context"
	"testing"

	"github.com/runfleet/runfleet/internal/queue"
	"github.com/runfleet/runfleet/internal/queue/postgres"
	"github.com/runfleet/runfleet/internal/queue/queuetest"
	"github.com/runfleet/runfleet/internal/store/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func openQueue(t *testing.T, dsn string, opts postgres.Options) *postgres.Queue {
	t.Helper()
	q, err := postgres.Open(context.Background(), dsn, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := q.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return q
}

func TestContract(t *testing.T) {
	queuetest.Run(t, func(t *testing.T, opts queuetest.Options) queue.Queue {
		return openQueue(t, pgtest.NewSchema(t), postgres.Options{MaxReceives: opts.MaxReceives})
	}, queuetest.StaleReceiptKeepsMessage)
}
