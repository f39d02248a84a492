package bolt

import (
	"encoding/binary"
	"fmt"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/runfleet/runfleet/internal/boltcommit"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// unsettled reports whether a job's demand is still open (open,
// waiting or unmatched): the jobs the open index lists, and the only
// ones kept however old their ExpiresAt.
func unsettled(s runner.JobStatus) bool {
	return s == runner.JobOpen || s == runner.JobWaiting || s == runner.JobUnmatched
}

// jobGoneAt reports whether a stored job is a settled one whose retention
// has passed at now: it counts as absent, as in DynamoDB before its TTL
// sweeper gets to it.
func jobGoneAt(j *runner.Job, now time.Time) bool {
	return !unsettled(j.Status) && !j.ExpiresAt.IsZero() && !j.ExpiresAt.After(now)
}

// openJobKeyLen is the queued-at prefix of an open index key: seconds since
// the epoch with the sign bit flipped (so times before 1970 still sort
// first) and nanoseconds, both big-endian. It keeps QueuedAt's full
// precision, so the index order is exactly QueuedAt order, then job key.
const openJobKeyLen = 8 + 4

func openJobKey(j *runner.Job) []byte {
	key := make([]byte, 0, openJobKeyLen+len(j.Key()))
	key = binary.BigEndian.AppendUint64(key, uint64(j.QueuedAt.Unix())^(1<<63))
	key = binary.BigEndian.AppendUint32(key, uint32(j.QueuedAt.Nanosecond()))
	return append(key, j.Key()...)
}

func openJobKeyJob(key []byte) (string, error) {
	if len(key) <= openJobKeyLen {
		return "", fmt.Errorf("bolt: malformed open job index key %q", key)
	}
	return string(key[openJobKeyLen:]), nil
}

// jobWrite is one write of a job record: a create when from is "",
// otherwise a compare-and-set from status from at the version the caller
// read. It is prepared before the transaction (it reads the clock) and
// applied inside it, where it may run more than once.
type jobWrite struct {
	record *runner.Job
	from   runner.JobStatus
}

// newJobWrite prepares the record that j's write stores: its next version,
// and, once the job is settled, an expiry if the writer left none.
func newJobWrite(j *runner.Job, from runner.JobStatus, now time.Time) jobWrite {
	record := j.Clone()
	record.Version = j.Version + 1
	if from == "" {
		record.Version = 1
	}
	if !unsettled(record.Status) && record.ExpiresAt.IsZero() {
		record.ExpiresAt = now.Add(store.DeletedRetention)
	}
	return jobWrite{record: record, from: from}
}

// check decides, writing nothing, whether the write may go ahead. It
// returns the stored record the write replaces (nil if none; possibly one
// whose retention is over) or a refusal already marked Unchanged.
func (w jobWrite) check(tx *bbolt.Tx, now time.Time) (*runner.Job, error) {
	key := w.record.Key()
	stored, err := jobKind.get(tx, key)
	if err != nil {
		return nil, err
	}
	current := stored
	if stored != nil && jobGoneAt(stored, now) {
		current = nil
	}
	if w.from == "" {
		if current != nil {
			return nil, boltcommit.Unchanged(fmt.Errorf("bolt: job %s: %w", key, store.ErrJobExists))
		}
		return stored, nil
	}
	if err := jobKind.check(store.Expect(store.KindJob, key, w.from, w.record.Version-1), current); err != nil {
		return nil, err
	}
	return stored, nil
}

// apply stores the record over stored (as check returned it) and moves the
// job's index entries: in the open index while unsettled, in the expiry
// index once settled.
func (w jobWrite) apply(tx *bbolt.Tx, stored *runner.Job) error {
	key := w.record.Key()
	open, expiry := tx.Bucket(bucketOpenJobs), tx.Bucket(bucketJobExpiry)
	if stored != nil {
		if unsettled(stored.Status) {
			if err := open.Delete(openJobKey(stored)); err != nil {
				return err
			}
		} else if err := expiry.Delete(expiryKey(stored.ExpiresAt, key)); err != nil {
			return err
		}
	}
	if err := jobKind.put(tx, key, w.record); err != nil {
		return err
	}
	if unsettled(w.record.Status) {
		return open.Put(openJobKey(w.record), nil)
	}
	return expiry.Put(expiryKey(w.record.ExpiresAt, key), nil)
}

// reportTo tells the caller's struct what was stored, once committed.
func (w jobWrite) reportTo(j *runner.Job) {
	j.Version = w.record.Version
	j.ExpiresAt = w.record.ExpiresAt
}
