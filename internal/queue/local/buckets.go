package local

import (
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/runfleet/runfleet/internal/queue"
)

// bucketNames are the names of a queue's three buckets.
type bucketNames struct {
	messages, due, dead []byte
}

var (
	// ownFileBuckets name the buckets of a queue that has its file to itself.
	ownFileBuckets = bucketNames{
		messages: []byte("messages"), // seq → record, every live message
		due:      []byte("due"),      // due time ‖ seq → nothing: the visibility index
		dead:     []byte("dead"),     // seq → record, dead letters
	}
	// sharedFileBuckets name them in a file shared with other data (OpenInDB),
	// prefixed so that they cannot collide with its owner's buckets.
	sharedFileBuckets = bucketNames{
		messages: []byte("queue.messages"),
		due:      []byte("queue.due"),
		dead:     []byte("queue.dead"),
	}
)

// buckets are the queue's buckets inside one transaction.
type buckets struct {
	messages, due, dead *bolt.Bucket
}

func (n bucketNames) open(tx *bolt.Tx) buckets {
	return buckets{
		messages: tx.Bucket(n.messages),
		due:      tx.Bucket(n.due),
		dead:     tx.Bucket(n.dead),
	}
}

func (n bucketNames) create(tx *bolt.Tx) error {
	for _, name := range [][]byte{n.messages, n.due, n.dead} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	return nil
}

// put stores rec under seq and indexes it by its due time.
func (b buckets) put(seq uint64, rec record) error {
	if err := b.messages.Put(messageKey(seq), rec.encode()); err != nil {
		return err
	}
	return b.due.Put(dueKey(rec.due, seq), nil)
}

func (b buckets) get(seq uint64) (record, bool, error) {
	buf := b.messages.Get(messageKey(seq))
	if buf == nil {
		return record{}, false, nil
	}
	rec, err := decodeRecord(buf)
	return rec, err == nil, err
}

// remove drops a live message and its index entry.
func (b buckets) remove(seq uint64, rec record) error {
	if err := b.due.Delete(dueKey(rec.due, seq)); err != nil {
		return err
	}
	return b.messages.Delete(messageKey(seq))
}

// reschedule moves a live message to a new due time.
func (b buckets) reschedule(seq uint64, old, next record) error {
	if err := b.due.Delete(dueKey(old.due, seq)); err != nil {
		return err
	}
	return b.put(seq, next)
}

func (b buckets) insert(body []byte, rec record) (uint64, error) {
	seq, err := b.messages.NextSequence()
	if err != nil {
		return 0, err
	}
	rec.body = body
	return seq, b.put(seq, rec)
}

// nextDue is the earliest time any live message is or becomes visible.
func (b buckets) nextDue() (time.Time, bool) {
	key, _ := b.due.Cursor().First()
	if key == nil {
		return time.Time{}, false
	}
	due, _, err := parseDueKey(key)
	return due, err == nil
}

// take delivers up to max visible messages, hiding each for visibility, and
// dead-letters on the way those already delivered maxReceives times. changed
// reports whether it wrote anything.
func (b buckets) take(now time.Time, max int, visibility time.Duration, maxReceives int) (msgs []queue.Message, changed bool, err error) {
	type candidate struct {
		seq uint64
		rec record
	}
	// Collect first: writing to a bucket while a cursor walks it is unsafe.
	var candidates []candidate
	deliverable := 0
	c := b.due.Cursor()
	for key, _ := c.First(); key != nil && deliverable < max; key, _ = c.Next() {
		due, seq, err := parseDueKey(key)
		if err != nil {
			return nil, false, err
		}
		if due.After(now) {
			break
		}
		rec, ok, err := b.get(seq)
		if err != nil || !ok {
			return nil, false, fmt.Errorf("%w: index entry for message %d", errCorruptRecord, seq)
		}
		candidates = append(candidates, candidate{seq, rec})
		if !exhausted(rec, maxReceives) {
			deliverable++
		}
	}

	msgs = make([]queue.Message, 0, deliverable)
	for _, cand := range candidates {
		if exhausted(cand.rec, maxReceives) {
			if err := b.deadLetter(now, cand.seq, cand.rec); err != nil {
				return nil, true, err
			}
			continue
		}
		next := cand.rec
		next.receives++
		next.inFlight = true
		next.due = now.Add(visibility)
		if err := b.reschedule(cand.seq, cand.rec, next); err != nil {
			return nil, true, err
		}
		msgs = append(msgs, delivery(cand.seq, next))
	}
	return msgs, len(candidates) > 0, nil
}

func exhausted(rec record, maxReceives int) bool {
	return maxReceives > 0 && rec.receives >= maxReceives
}

func (b buckets) deadLetter(now time.Time, seq uint64, rec record) error {
	if err := b.remove(seq, rec); err != nil {
		return err
	}
	dead := rec
	dead.inFlight = false
	dead.due = now
	return b.dead.Put(messageKey(seq), dead.encode())
}

// releaseInFlight makes every in-flight message visible now.
func (b buckets) releaseInFlight(now time.Time) error {
	type release struct {
		seq uint64
		rec record
	}
	var releases []release
	err := b.messages.ForEach(func(key, value []byte) error {
		rec, err := decodeRecord(value)
		if err != nil {
			return err
		}
		if rec.inFlight && len(key) == 8 {
			releases = append(releases, release{seq: bigEndian(key), rec: rec})
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, r := range releases {
		next := r.rec
		next.inFlight = false
		next.due = now
		if err := b.reschedule(r.seq, r.rec, next); err != nil {
			return err
		}
	}
	return nil
}

func (b buckets) deadLetters() ([]queue.Message, error) {
	var msgs []queue.Message
	err := b.dead.ForEach(func(key, value []byte) error {
		rec, err := decodeRecord(value)
		if err != nil || len(key) != 8 {
			return errCorruptRecord
		}
		msgs = append(msgs, queue.Message{ID: messageID(bigEndian(key)), Body: rec.body, ReceiveCount: rec.receives})
		return nil
	})
	return msgs, err
}

func delivery(seq uint64, rec record) queue.Message {
	return queue.Message{
		ID:           messageID(seq),
		Body:         rec.body,
		ReceiveCount: rec.receives,
		Receipt:      receipt(seq, rec.receives),
	}
}
