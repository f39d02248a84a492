package postgres_test

import (
	"context"
	"testing"

	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/store/postgres"
	"github.com/runfleet/runfleet/internal/store/postgres/pgtest"
	"github.com/runfleet/runfleet/internal/store/storetest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// openTemp opens a store on a fresh database, closed when the test ends.
func openTemp(t testing.TB, opts ...postgres.Option) (*postgres.Store, string) {
	t.Helper()
	dsn := pgtest.NewSchema(t)
	s, err := postgres.Open(context.Background(), dsn, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, dsn
}

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, _ := openTemp(t)
		return s
	})
}

func TestArrivalsContract(t *testing.T) {
	storetest.RunArrivals(t, func(t *testing.T) store.Store {
		s, _ := openTemp(t)
		return s
	})
}
