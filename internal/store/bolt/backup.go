package bolt

import (
	"errors"
	"fmt"
	"io"
	"time"

	bbolt "go.etcd.io/bbolt"
)

// WriteBackup writes a consistent copy of the whole file (records and work
// queue) to w while the store stays in use: one read transaction sees
// the file as of its start, and writers go on beside it (bbolt keeps the
// pages it reads until it ends). It returns the bytes written.
func (s *Store) WriteBackup(w io.Writer) (int64, error) {
	var n int64
	err := s.db.View(func(tx *bbolt.Tx) error {
		var err error
		n, err = tx.WriteTo(w)
		return err
	})
	if err != nil {
		return n, fmt.Errorf("bolt: backup: %w", err)
	}
	return n, nil
}

// CheckFile opens the store file at path read-only and checks it page by
// page, and that it holds runfleet's buckets: a backup worth restoring.
// It fails at once, rather than waiting, when a process holds the file.
func CheckFile(path string) error {
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: 100 * time.Millisecond})
	if err != nil {
		return fmt.Errorf("bolt: open %s: %w", path, err)
	}
	defer db.Close()
	return db.View(func(tx *bbolt.Tx) error {
		var problems []error
		for err := range tx.Check() {
			problems = append(problems, err)
		}
		for _, b := range allBuckets {
			if tx.Bucket(b) == nil {
				problems = append(problems, fmt.Errorf("no %s bucket: not a runfleet store", b))
			}
		}
		if len(problems) > 0 {
			return fmt.Errorf("bolt: %s is damaged: %w", path, errors.Join(problems...))
		}
		return nil
	})
}
