package local_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/runfleet/runfleet/internal/queue"
	"github.com/runfleet/runfleet/internal/queue/local"
	"github.com/runfleet/runfleet/internal/queue/queuetest"
)

// ownerBucket stands for the data of the file's owner, which the queue must
// neither collide with nor disturb.
var ownerBucket = []byte("messages")

func openSharedDB(t *testing.T, path string) *bolt.DB {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(ownerBucket)
		if err != nil {
			return err
		}
		return b.Put([]byte("owner"), []byte("data"))
	})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func openInDB(t *testing.T, db *bolt.DB, opts local.Options) *local.Queue {
	t.Helper()
	q, err := local.OpenInDB(db, opts)
	if err != nil {
		t.Fatalf("OpenInDB: %v", err)
	}
	return q
}

func TestContractInSharedFile(t *testing.T) {
	t.Parallel()
	queuetest.Run(t, func(t *testing.T, opts queuetest.Options) queue.Queue {
		db := openSharedDB(t, filepath.Join(t.TempDir(), "state.db"))
		q := openInDB(t, db, local.Options{MaxReceives: opts.MaxReceives})
		t.Cleanup(func() {
			if err := q.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			checkOwnerData(t, db)
			if err := db.Close(); err != nil {
				t.Errorf("db.Close: %v", err)
			}
		})
		return q
	}, queuetest.StaleReceiptKeepsMessage)
}

func checkOwnerData(t *testing.T, db *bolt.DB) {
	t.Helper()
	err := db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(ownerBucket)
		if b == nil || !bytes.Equal(b.Get([]byte("owner")), []byte("data")) || b.Stats().KeyN != 1 {
			t.Errorf("the queue disturbed its owner's bucket %q", ownerBucket)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// SendInTx commits with the owner's writes, or not at all, and wakes a
// Receive already waiting.
func TestSendInTxCommitsWithTheTransaction(t *testing.T) {
	t.Parallel()
	db := openSharedDB(t, filepath.Join(t.TempDir(), "state.db"))
	t.Cleanup(func() { _ = db.Close() })
	q := openInDB(t, db, local.Options{})
	t.Cleanup(func() { _ = q.Close() })

	got := make(chan []queue.Message, 1)
	go func() {
		msgs, err := q.Receive(context.Background(), queue.ReceiveOptions{Max: 10, Wait: 10 * time.Second})
		if err != nil {
			t.Errorf("Receive: %v", err)
		}
		got <- msgs
	}()
	for q.Waiting() == 0 {
		time.Sleep(time.Millisecond)
	}

	now := time.Now()
	refused := q.Committer().Update(func(tx *bolt.Tx) error {
		if err := q.SendInTx(tx, []byte("rolled back"), now, 0); err != nil {
			return err
		}
		return errRefused
	})
	if refused != errRefused {
		t.Fatalf("Update = %v, want the function's error", refused)
	}
	err := q.Committer().Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(ownerBucket).Put([]byte("with message"), []byte("yes")); err != nil {
			return err
		}
		return q.SendInTx(tx, []byte("committed"), now, 0)
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case msgs := <-got:
		if len(msgs) != 1 || string(msgs[0].Body) != "committed" {
			t.Fatalf("waiting Receive got %d messages (%q), want only the committed one", len(msgs), bodies(msgs))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting Receive was not woken by the commit")
	}
}

type refusal struct{}

func (refusal) Error() string { return "refused" }

var errRefused error = refusal{}

func bodies(msgs []queue.Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, string(m.Body))
	}
	return out
}

func TestSharedFileKeepsMessagesAcrossRestart(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.db")
	db := openSharedDB(t, path)
	q := openInDB(t, db, local.Options{})
	now := time.Now()
	if err := q.Committer().Update(func(tx *bolt.Tx) error { return q.SendInTx(tx, []byte("outboxed"), now, 0) }); err != nil {
		t.Fatal(err)
	}
	mustSend(t, q, "sent", 0)
	first := mustReceive(t, q, queue.ReceiveOptions{Max: 1, Visibility: time.Hour})
	if len(first) != 1 || string(first[0].Body) != "outboxed" {
		t.Fatalf("before restart got %q, want [outboxed]", bodies(first))
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = openSharedDB(t, path)
	t.Cleanup(func() { _ = db.Close() })
	q = openInDB(t, db, local.Options{})
	t.Cleanup(func() { _ = q.Close() })
	again := mustReceive(t, q, queue.ReceiveOptions{Max: 10, Visibility: time.Hour})
	receives := map[string]int{}
	for _, m := range again {
		receives[string(m.Body)] = m.ReceiveCount
	}
	if len(again) != 2 || receives["outboxed"] != 2 || receives["sent"] != 1 {
		t.Fatalf("after restart got %q (receive counts %v), want the unacknowledged outboxed (2nd receive) and sent (1st)", bodies(again), receives)
	}
}
