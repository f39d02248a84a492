package bolt_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/runfleet/runfleet/internal/queue"
	"github.com/runfleet/runfleet/internal/queue/local"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/store/bolt"
)

// writeLayout1 writes, with bbolt alone, a state file as the release with
// delivery marks left it: schema "1", one running instance holding its pool
// slot, a deleted one, a delivery mark, credentials and a queued message.
func writeLayout1(t *testing.T, path string, running, deleted *runner.Instance) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		buckets := map[string]*bbolt.Bucket{}
		for _, name := range []string{"meta", "instances", "pools", "deliveries", "live_instances", "instance_expiry", "delivery_expiry"} {
			b, err := tx.CreateBucket([]byte(name))
			if err != nil {
				return err
			}
			buckets[name] = b
		}
		var putErr error
		put := func(bucket, key string, value []byte) {
			putErr = errors.Join(putErr, buckets[bucket].Put([]byte(key), value))
		}
		for _, inst := range []*runner.Instance{running, deleted} {
			raw, merr := json.Marshal(inst)
			if merr != nil {
				return merr
			}
			put("instances", inst.Name, raw)
		}
		put("meta", "schema", []byte("1"))
		put("live_instances", running.Pool+"\x00"+running.Name, nil)
		put("pools", running.Pool, []byte(`{"live":1}`))
		put("deliveries", "delivery-1", []byte(`{"expires_at":"2030-01-01T00:00:00Z"}`))
		put("delivery_expiry", "\x00\x00\x01\x00\x00\x00\x00\x00delivery-1", nil)
		if putErr != nil {
			return putErr
		}
		// Credentials buckets were made on first use, in layout 1 as now.
		creds, err := tx.CreateBucket([]byte("credentials"))
		if err != nil {
			return err
		}
		if _, err := tx.CreateBucket([]byte("credential_expiry")); err != nil {
			return err
		}
		return creds.Put([]byte(running.Name), []byte(`{"create_attempt":1,"encoded_jit_config":"e30=","expires_at":"2099-01-01T00:00:00Z"}`))
	})
	if err != nil {
		t.Fatal(err)
	}
	// The queue keeps its own buckets in the file, which it made itself.
	q, err := local.OpenInDB(db, local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Send(context.Background(), []byte("queued before the upgrade"), 0); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(q.Close(), db.Close()); err != nil {
		t.Fatal(err)
	}
}

func TestUpgradesLayout1InPlace(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	running := pendingInstance("p", 1)
	running.Status, running.Version = runner.StatusRunning, 3
	deleted := pendingInstance("p", 2)
	deleted.Status, deleted.Version = runner.StatusDeleted, 6
	deleted.ExpiresAt = time.Now().Add(time.Hour).Truncate(time.Millisecond)
	writeLayout1(t, path, running, deleted)

	s, err := bolt.OpenWithQueue(path, local.Options{})
	if err != nil {
		t.Fatalf("open a layout 1 file: %v", err)
	}
	got, err := s.GetInstance(ctx, running.Name)
	if err != nil || got.Status != runner.StatusRunning || got.Version != 3 {
		t.Fatalf("running instance after the upgrade: %+v, %v", got, err)
	}
	if n, err := s.PoolUsage(ctx, "p"); err != nil || n != 1 {
		t.Fatalf("PoolUsage after the upgrade = %d, %v; want 1", n, err)
	}
	if live, err := s.ListLiveInstances(ctx); err != nil || len(live) != 1 {
		t.Fatalf("ListLiveInstances after the upgrade = %d, %v; want 1", len(live), err)
	}
	if err := s.CreateInstance(ctx, admit(pendingInstance("p", 2), 10)); err == nil {
		t.Fatal("the deleted instance's name was free after the upgrade")
	}
	// The new buckets are there.
	j := openJob("p", 7, time.Now())
	inst := pendingInstance("p", 7)
	if err := s.CreateInstanceAndSend(ctx, store.Admission{Instance: inst, MaxRunners: 10, Job: j}, []byte("create")); err != nil {
		t.Fatalf("admission after the upgrade: %v", err)
	}
	if msgs, err := s.Queue().Receive(ctx, queue.ReceiveOptions{Max: 10}); err != nil || len(msgs) != 2 {
		t.Fatalf("Receive after the upgrade = %d messages, %v; want the one queued before and the admission's", len(msgs), err)
	}
	if c, err := s.GetRunnerCredentials(ctx, running.Name); err != nil || c.CreateAttempt != 1 {
		t.Fatalf("credentials after the upgrade: %v, %v", c, err)
	}
	if _, err := s.InstallationID(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// The file now says layout 2 and holds no delivery marks; it opens
	// again as an ordinary file.
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	_ = db.View(func(tx *bbolt.Tx) error {
		if v := string(tx.Bucket([]byte("meta")).Get([]byte("schema"))); v != "2" {
			t.Errorf("schema after the upgrade = %q, want 2", v)
		}
		for _, gone := range []string{"deliveries", "delivery_expiry"} {
			if tx.Bucket([]byte(gone)) != nil {
				t.Errorf("bucket %s survived the upgrade", gone)
			}
		}
		return nil
	})
	_ = db.Close()
	s2, err := bolt.Open(path)
	if err != nil {
		t.Fatalf("reopen after the upgrade: %v", err)
	}
	defer s2.Close()
	if _, err := s2.GetJob(ctx, j.Key()); err != nil {
		t.Fatalf("job after reopen: %v", err)
	}
}

func TestRefusesUnknownLayout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		meta, err := tx.CreateBucket([]byte("meta"))
		if err != nil {
			return err
		}
		return meta.Put([]byte("schema"), []byte("3"))
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = db.Close()

	s, err := bolt.Open(path)
	if err == nil {
		_ = s.Close()
		t.Fatal("a file of an unknown layout opened")
	}
	if !strings.Contains(err.Error(), `"3"`) {
		t.Fatalf("error %q does not name the file's layout", err)
	}
	// Refusing changed nothing: no bucket of this layout was added.
	db, err = bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_ = db.View(func(tx *bbolt.Tx) error {
		if tx.Bucket([]byte("jobs")) != nil {
			t.Error("refusing the file still created the jobs bucket")
		}
		return nil
	})
}
