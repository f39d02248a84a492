package cache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// Dynamo is a Store for the serverless mode: its index lives in a DynamoDB
// table, so concurrent Lambda instances share it (first writer wins is a
// conditional write, not a mutex), and its bytes in an S3 bucket, uploaded
// by the machine's cache agent as plain objects on presigned URLs
// (PartUploader, parts.go) and downloaded on presigned GETs (DownloadURLer,
// PartDownloader): no byte of an archive passes through the function. Uploads through runfleet
// (PutBlob, PutBlock) are refused.
//
// The table has a string hash key "pk" and a string range key "sk"
// (CreateDynamoTable). Each entry is two items:
//   - the entry, pk "repo#<repo id>", sk refSortKey (scope, version, key):
//     its id, sizes and times; conditional writes on it decide who reserves;
//   - its id, pk "id#<id>", sk "id": the ref it belongs to and the list
//     of its archive's parts, for the calls that name an id.
//
// A lookup queries one (repository, scope, version) at a time, so it reads
// only the candidates Match could pick.
type Dynamo struct {
	db      *dynamodb.Client
	table   string
	client  *s3.Client
	presign *s3.PresignClient
	bucket  string
	prefix  string
	policy  EvictionPolicy
	now     func() time.Time
	log     *slog.Logger
	// stats is what the last eviction scan found (Stats has no context to
	// read the table with).
	statsMu sync.Mutex
	stats   StoreStats
}

// DynamoOptions configure a Dynamo store.
type DynamoOptions struct {
	DB     *dynamodb.Client
	Table  string
	S3     *s3.Client
	Bucket string
	// Prefix is prepended to every object key (e.g. "cache/").
	Prefix string
	Policy EvictionPolicy
	Now    func() time.Time
	Log    *slog.Logger
}

// NewDynamo returns the store; it reads nothing until used, so a Lambda's
// cold start pays nothing for it.
func NewDynamo(o DynamoOptions) (*Dynamo, error) {
	if o.DB == nil || o.S3 == nil || o.Table == "" || o.Bucket == "" {
		return nil, errors.New("cache: the DynamoDB store needs a table and a bucket")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Policy.PendingTTL <= 0 {
		o.Policy.PendingTTL = time.Hour
	}
	return &Dynamo{db: o.DB, table: o.Table, client: o.S3, presign: s3.NewPresignClient(o.S3), bucket: o.Bucket,
		prefix: o.Prefix, policy: o.Policy, now: o.Now, log: o.Log}, nil
}

// The item attributes.
const (
	attrPK         = "pk"
	attrSK         = "sk"
	attrID         = "id"
	attrRepo       = "repo"
	attrScope      = "scope"
	attrKey        = "key"
	attrVersion    = "version"
	attrSize       = "size"
	attrCreated    = "created"
	attrLastAccess = "last_access"
	attrFinalized  = "finalized"
	// attrParts is the id item's part list (dynamo_parts.go), attrPartCount
	// the entry item's count of them (set at finalize).
	attrParts     = "parts"
	attrPartCount = "nparts"
	// attrExpires is the table's TTL attribute (unix seconds): last access
	// plus MaxAge, so DynamoDB itself evicts by age; lookups skip items
	// past it that DynamoDB has not removed yet.
	attrExpires = "expires"
)

// expiry is the TTL of an item accessed at t; ok is false without MaxAge.
func (d *Dynamo) expiry(t time.Time) (dtypes.AttributeValue, bool) {
	if d.policy.MaxAge <= 0 {
		return nil, false
	}
	return nAttr(t.Add(d.policy.MaxAge).Unix()), true
}

// isNotFound: S3 answered that the object is not there.
func isNotFound(err error) bool {
	var nf *s3types.NotFound
	var nk *s3types.NoSuchKey
	return errors.As(err, &nf) || errors.As(err, &nk)
}

func repoPK(repoID int64) string { return "repo#" + strconv.FormatInt(repoID, 10) }
func idPK(id int64) string       { return "id#" + strconv.FormatInt(id, 10) }

// scopePrefix is the start of the sort keys of one scope and version. The
// parts are length-prefixed: a scope or a version may hold any character.
func scopePrefix(scope, version string) string {
	return fmt.Sprintf("%d:%s|%d:%s|", len(scope), scope, len(version), version)
}

// refSortKey is an entry's sort key under its repository.
func refSortKey(r Ref) string { return scopePrefix(r.Scope, r.Version) + r.Key }

func (d *Dynamo) blobKey(id int64) string { return d.prefix + "blobs/" + strconv.FormatInt(id, 10) }

func sAttr(s string) dtypes.AttributeValue { return &dtypes.AttributeValueMemberS{Value: s} }
func nAttr(n int64) dtypes.AttributeValue {
	return &dtypes.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}
func bAttr(b bool) dtypes.AttributeValue { return &dtypes.AttributeValueMemberBOOL{Value: b} }

func getS(item map[string]dtypes.AttributeValue, name string) string {
	if v, ok := item[name].(*dtypes.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func getN(item map[string]dtypes.AttributeValue, name string) int64 {
	if v, ok := item[name].(*dtypes.AttributeValueMemberN); ok {
		n, _ := strconv.ParseInt(v.Value, 10, 64)
		return n
	}
	return 0
}

func getB(item map[string]dtypes.AttributeValue, name string) bool {
	v, ok := item[name].(*dtypes.AttributeValueMemberBOOL)
	return ok && v.Value
}

func entryItem(e Entry) map[string]dtypes.AttributeValue {
	return map[string]dtypes.AttributeValue{
		attrPK: sAttr(repoPK(e.RepoID)), attrSK: sAttr(refSortKey(e.Ref)),
		attrID: nAttr(e.ID), attrRepo: nAttr(e.RepoID), attrScope: sAttr(e.Scope), attrKey: sAttr(e.Key), attrVersion: sAttr(e.Version),
		attrSize: nAttr(e.Size), attrCreated: nAttr(e.Created.UnixNano()), attrLastAccess: nAttr(e.LastAccess.UnixNano()),
		attrFinalized: bAttr(e.Finalized),
	}
}

func entryFrom(item map[string]dtypes.AttributeValue) Entry {
	return Entry{
		Ref: Ref{RepoID: getN(item, attrRepo), Scope: getS(item, attrScope), Key: getS(item, attrKey), Version: getS(item, attrVersion)},
		ID:  getN(item, attrID), Size: getN(item, attrSize),
		Created: time.Unix(0, getN(item, attrCreated)).UTC(), LastAccess: time.Unix(0, getN(item, attrLastAccess)).UTC(),
		Finalized: getB(item, attrFinalized), PartCount: int(getN(item, attrPartCount)),
	}
}

func refKey(r Ref) map[string]dtypes.AttributeValue {
	return map[string]dtypes.AttributeValue{attrPK: sAttr(repoPK(r.RepoID)), attrSK: sAttr(refSortKey(r))}
}

func idKey(id int64) map[string]dtypes.AttributeValue {
	return map[string]dtypes.AttributeValue{attrPK: sAttr(idPK(id)), attrSK: sAttr("id")}
}

func conditionFailed(err error) bool {
	var cf *dtypes.ConditionalCheckFailedException
	var tc *dtypes.TransactionCanceledException
	return errors.As(err, &cf) || errors.As(err, &tc)
}

// readEntry reads ref's entry item, strongly consistent: a reservation or a
// finalize decides on it.
func (d *Dynamo) readEntry(ctx context.Context, ref Ref) (Entry, bool, error) {
	out, err := d.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &d.table, Key: refKey(ref), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return Entry{}, false, fmt.Errorf("cache: read the index: %w", err)
	}
	if out.Item == nil {
		return Entry{}, false, nil
	}
	return entryFrom(out.Item), true, nil
}

// Reserve implements Store: a transaction writes the entry, on condition
// that no entry holds the ref or that the one there is the stale
// reservation read just before (Conflict decides), and its id item.
func (d *Dynamo) Reserve(ctx context.Context, ref Ref) (Entry, error) {
	now := d.now()
	old, had, err := d.readEntry(ctx, ref)
	if err != nil {
		return Entry{}, err
	}
	if had && Conflict(old, now, d.policy.PendingTTL) && (!old.Finalized || d.archiveExists(ctx, old)) {
		// A finalized entry whose archive the bucket's lifecycle rule
		// removed is gone: the key is free again.
		return Entry{}, ErrExists
	}
	id, err := newID()
	if err != nil {
		return Entry{}, fmt.Errorf("cache: reserve: %w", err)
	}
	e := Entry{Ref: ref, ID: id, Created: now, LastAccess: now}
	put := &dtypes.Put{TableName: &d.table, Item: entryItem(e), ConditionExpression: aws.String("attribute_not_exists(pk)")}
	if had {
		// Replace exactly the stale reservation read: another reserver
		// that got there first changed its id.
		put.ConditionExpression = aws.String("id = :old")
		put.ExpressionAttributeValues = map[string]dtypes.AttributeValue{":old": nAttr(old.ID)}
	}
	idItem := idKey(id)
	idItem[attrRepo], idItem[attrScope], idItem[attrKey], idItem[attrVersion] = nAttr(ref.RepoID), sAttr(ref.Scope), sAttr(ref.Key), sAttr(ref.Version)
	if exp, ok := d.expiry(now); ok {
		put.Item[attrExpires], idItem[attrExpires] = exp, exp
	}
	_, err = d.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []dtypes.TransactWriteItem{
		{Put: put},
		{Put: &dtypes.Put{TableName: &d.table, Item: idItem, ConditionExpression: aws.String("attribute_not_exists(pk)")}},
	}})
	switch {
	case conditionFailed(err):
		return Entry{}, ErrExists
	case err != nil:
		return Entry{}, fmt.Errorf("cache: reserve: %w", err)
	}
	if had {
		d.removeObjects(ctx, old.ID)
	}
	return e, nil
}

// byID returns the entry id names and its archive's parts (none: one
// object, or nothing completed yet); ErrNotFound when it was replaced or
// evicted.
func (d *Dynamo) byID(ctx context.Context, id int64) (Entry, []Part, error) {
	out, err := d.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &d.table, Key: idKey(id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return Entry{}, nil, fmt.Errorf("cache: read the index: %w", err)
	}
	if out.Item == nil {
		return Entry{}, nil, ErrNotFound
	}
	ref := Ref{RepoID: getN(out.Item, attrRepo), Scope: getS(out.Item, attrScope), Key: getS(out.Item, attrKey), Version: getS(out.Item, attrVersion)}
	e, ok, err := d.readEntry(ctx, ref)
	if err != nil {
		return Entry{}, nil, err
	}
	if !ok || e.ID != id {
		// The reservation was replaced or evicted.
		return Entry{}, nil, ErrNotFound
	}
	parts, err := decodeParts(out.Item)
	if err != nil {
		return Entry{}, nil, err
	}
	return e, parts, nil
}

// pendingByID is byID for a call that adds bytes: ErrNotPending once the
// entry is finalized.
func (d *Dynamo) pendingByID(ctx context.Context, id int64) error {
	e, _, err := d.byID(ctx, id)
	if err != nil {
		return err
	}
	if e.Finalized {
		return ErrNotPending
	}
	return nil
}

// Finalize implements Store: the archive must be in the bucket and size
// bytes long; the entry item turns finalized on condition it is still this
// pending reservation.
func (d *Dynamo) Finalize(ctx context.Context, ref Ref, size int64) (Entry, error) {
	e, ok, err := d.readEntry(ctx, ref)
	switch {
	case err != nil:
		return Entry{}, err
	case !ok:
		return Entry{}, ErrNotFound
	case e.Finalized:
		return Entry{}, ErrNotPending
	}
	got, parts, err := d.uploaded(ctx, e.ID)
	if err != nil {
		return Entry{}, err
	}
	if got != size {
		return Entry{}, &InvalidError{Field: "size_bytes", Reason: fmt.Sprintf("%d, but %d bytes were uploaded", size, got)}
	}
	now := d.now()
	set := "SET finalized = :t, #size = :s, last_access = :a, nparts = :n"
	vals := map[string]dtypes.AttributeValue{
		":t": bAttr(true), ":f": bAttr(false), ":s": nAttr(size), ":a": nAttr(now.UnixNano()), ":id": nAttr(e.ID), ":n": nAttr(int64(parts)),
	}
	if exp, ok := d.expiry(now); ok {
		set += ", expires = :e"
		vals[":e"] = exp
	}
	_, err = d.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &d.table, Key: refKey(ref), UpdateExpression: &set,
		ExpressionAttributeNames:  map[string]string{"#size": attrSize},
		ConditionExpression:       aws.String("id = :id AND finalized = :f"),
		ExpressionAttributeValues: vals,
	})
	switch {
	case conditionFailed(err):
		return Entry{}, ErrNotPending
	case err != nil:
		return Entry{}, fmt.Errorf("cache: finalize: %w", err)
	}
	e.Size, e.Finalized, e.LastAccess, e.PartCount = size, true, now, parts
	return e, nil
}

// uploaded measures entry id's completed archive: the sum of its recorded
// parts, or its one object's size.
func (d *Dynamo) uploaded(ctx context.Context, id int64) (size int64, parts int, err error) {
	out, err := d.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &d.table, Key: idKey(id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return 0, 0, fmt.Errorf("cache: read the index: %w", err)
	}
	list, err := decodeParts(out.Item)
	if err != nil {
		return 0, 0, err
	}
	if len(list) > 0 {
		for _, p := range list {
			size += p.Size
		}
		return size, len(list), nil
	}
	head, err := d.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &d.bucket, Key: aws.String(d.blobKey(id))})
	if err != nil {
		return 0, 0, &InvalidError{Field: "size_bytes", Reason: "nothing was uploaded"}
	}
	return aws.ToInt64(head.ContentLength), 0, nil
}

// errThroughAgent refuses the uploads that would carry bytes through the
// function: the serverless cache takes them only from the machine's agent.
var errThroughAgent = &InvalidError{Field: "upload", Reason: "the serverless cache takes uploads only from the machine's cache agent, straight to S3"}

// PutBlob implements Store: refused (errThroughAgent).
func (d *Dynamo) PutBlob(context.Context, int64, io.Reader, int64, int64) (int64, error) {
	return 0, errThroughAgent
}

// PutBlock implements Store: refused (errThroughAgent).
func (d *Dynamo) PutBlock(context.Context, int64, string, io.Reader, int64, int64) (int64, error) {
	return 0, errThroughAgent
}

// CommitBlocks implements Store: refused (errThroughAgent).
func (d *Dynamo) CommitBlocks(context.Context, int64, []string) error { return errThroughAgent }

// Open implements Store: the archives are served by presigned GETs only
// (DownloadURL, DownloadParts), never through the function; an archive in
// parts is restored by the machine's cache agent.
func (d *Dynamo) Open(context.Context, int64) (io.ReadCloser, int64, error) {
	return nil, 0, ErrNeedsAgent
}

// DownloadURL implements DownloadURLer: a presigned GET of a finalized
// entry's archive; ErrInParts for an archive in parts.
func (d *Dynamo) DownloadURL(ctx context.Context, id int64, ttl time.Duration) (string, error) {
	e, parts, err := d.byID(ctx, id)
	switch {
	case err != nil:
		return "", err
	case !e.Finalized:
		return "", ErrNotFound
	case len(parts) > 0:
		return "", ErrInParts
	}
	req, err := d.presign.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: &d.bucket, Key: aws.String(d.blobKey(id))}, s3.WithPresignExpires(ttl))
	if err != nil {
		return "", fmt.Errorf("cache: presign: %w", err)
	}
	return req.URL, nil
}

// Stats implements Store: what the last Evict counted.
func (d *Dynamo) Stats() StoreStats {
	d.statsMu.Lock()
	defer d.statsMu.Unlock()
	return d.stats
}

var (
	_ Store          = (*Dynamo)(nil)
	_ DownloadURLer  = (*Dynamo)(nil)
	_ PartUploader   = (*Dynamo)(nil)
	_ PartDownloader = (*Dynamo)(nil)
)
