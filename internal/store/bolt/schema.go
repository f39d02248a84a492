package bolt

import (
	"fmt"

	bbolt "go.etcd.io/bbolt"
)

var keySchema = []byte("schema")

// schemaVersion names the record layout of store.go's bucket list; a file
// written by a layout this code does not know is refused rather than
// misread.
const schemaVersion = "2"

// Layout 1 kept webhook delivery marks, which the job ledger replaced; it
// is otherwise layout 2 without the job buckets, so upgrading drops the
// marks and adds the (empty) job buckets.
const schemaVersionDeliveryMarks = "1"

var (
	bucketDeliveriesV1     = []byte("deliveries")
	bucketDeliveryExpiryV1 = []byte("delivery_expiry")
)

// initSchema prepares a new file, upgrades one of layout 1 in place, and
// refuses any other. It runs in one transaction, so an upgrade interrupted
// by a crash leaves the file as it was.
func initSchema(tx *bbolt.Tx) error {
	for _, name := range allBuckets {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("bucket %s: %w", name, err)
		}
	}
	meta := tx.Bucket(bucketMeta)
	switch got := string(meta.Get(keySchema)); got {
	case schemaVersion:
		return nil
	case "":
		return meta.Put(keySchema, []byte(schemaVersion))
	case schemaVersionDeliveryMarks:
		return upgradeFromDeliveryMarks(tx, meta)
	default:
		return fmt.Errorf("file has schema %q, this runfleet reads %q (and upgrades %q)", got, schemaVersion, schemaVersionDeliveryMarks)
	}
}

// upgradeFromDeliveryMarks turns a layout 1 file into layout 2. Instances,
// pool counters, credentials and the queue keep their buckets and
// encoding, so an operator's runners survive the upgrade; forgetting the
// marks is safe because every path the ledger guards is idempotent.
func upgradeFromDeliveryMarks(tx *bbolt.Tx, meta *bbolt.Bucket) error {
	for _, name := range [][]byte{bucketDeliveriesV1, bucketDeliveryExpiryV1} {
		if tx.Bucket(name) == nil {
			continue
		}
		if err := tx.DeleteBucket(name); err != nil {
			return fmt.Errorf("drop bucket %s: %w", name, err)
		}
	}
	return meta.Put(keySchema, []byte(schemaVersion))
}
