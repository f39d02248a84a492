package dynamodb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sync"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// Store implements store.Store on one DynamoDB table created with the schema
// of CreateTable (or template.yaml).
type Store struct {
	// Leases are the generic lease operations over changeLease.
	store.Leases
	client *ddb.Client
	table  string
	// now is the clock expiries are measured against; tests replace it.
	now func() time.Time
	log *slog.Logger
	// pageSize caps items per Query page; zero leaves DynamoDB's 1 MB pages.
	// Tests set it small so paging is exercised without thousands of items.
	pageSize int32
	// installation caches InstallationID's answer, which never changes.
	installation struct {
		sync.Mutex
		id string
	}
}

var _ store.Store = (*Store)(nil)

// New returns a Store over the named table.
func New(client *ddb.Client, table string) *Store {
	s := &Store{client: client, table: table, now: time.Now, log: slog.Default()}
	s.Leases = store.NewLeases(s.changeLease, func(ctx context.Context, name string) (*runner.Lease, error) {
		return leaseKind.get(ctx, s, name)
	})
	return s
}

// requestToken returns a fresh random 128-bit id in hex, naming one write
// (write_id) so that a retried write can recognise itself, or this
// installation.
func requestToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}
