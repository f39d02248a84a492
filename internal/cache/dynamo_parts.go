package cache

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// The Dynamo store's parts (parts.go): the same objects as the S3 store's,
// the part list kept on the entry's id item (attrParts, one string per
// part, ~50 bytes each: MaxEntryParts keeps the item far under
// DynamoDB's 400 KB) and the count on the entry item at finalize, so a
// lookup knows where to check the archive is still there.

func (d *Dynamo) parts() partBucket {
	return partBucket{client: d.client, presign: d.presign, bucket: d.bucket, prefix: d.prefix, log: d.log}
}

// encodePart is a part as the id item keeps it: "<n> <size> <etag>".
func encodePart(p Part) string { return fmt.Sprintf("%d %d %s", p.N, p.Size, p.ETag) }

func decodeParts(item map[string]dtypes.AttributeValue) ([]Part, error) {
	l, ok := item[attrParts].(*dtypes.AttributeValueMemberL)
	if !ok {
		return nil, nil
	}
	parts := make([]Part, len(l.Value))
	for i, v := range l.Value {
		s, _ := v.(*dtypes.AttributeValueMemberS)
		if s == nil {
			return nil, fmt.Errorf("cache: part %d of the index's list is not a string", i)
		}
		f := strings.SplitN(s.Value, " ", 3)
		if len(f) != 3 {
			return nil, fmt.Errorf("cache: part %d of the index's list is malformed", i)
		}
		n, err1 := strconv.ParseInt(f[0], 10, 32)
		size, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("cache: part %d of the index's list is malformed", i)
		}
		parts[i] = Part{N: int32(n), Size: size, ETag: f[2]}
	}
	return parts, nil
}

// PresignPart implements PartUploader, as the S3 store does.
func (d *Dynamo) PresignPart(ctx context.Context, id int64, part int32, size, limit int64, ttl time.Duration) (string, http.Header, error) {
	if err := d.pendingByID(ctx, id); err != nil {
		return "", nil, err
	}
	return d.parts().presignPut(ctx, id, part, size, limit, ttl)
}

// PresignPieces implements PartUploader, as the S3 store does.
func (d *Dynamo) PresignPieces(ctx context.Context, id int64, first int32, size, limit int64, ttl time.Duration) ([]PresignedPart, error) {
	if err := d.pendingByID(ctx, id); err != nil {
		return nil, err
	}
	return d.parts().presignPieces(ctx, id, first, size, limit, ttl)
}

// CompleteParts implements PartUploader: sizes and ETags come from S3,
// never from the caller; the list goes on the id item.
func (d *Dynamo) CompleteParts(ctx context.Context, id int64, order []int32, limit int64) error {
	if err := d.pendingByID(ctx, id); err != nil {
		return err
	}
	parts, err := d.parts().complete(ctx, id, order, limit)
	if err != nil {
		return err
	}
	list := make([]dtypes.AttributeValue, len(parts))
	for i, p := range parts {
		list[i] = sAttr(encodePart(p))
	}
	_, err = d.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &d.table, Key: idKey(id),
		UpdateExpression:          aws.String("SET #parts = :p"),
		ConditionExpression:       aws.String("attribute_exists(pk)"),
		ExpressionAttributeNames:  map[string]string{"#parts": attrParts},
		ExpressionAttributeValues: map[string]dtypes.AttributeValue{":p": &dtypes.AttributeValueMemberL{Value: list}},
	})
	switch {
	case conditionFailed(err):
		return ErrNotFound
	case err != nil:
		return fmt.Errorf("cache: record the parts: %w", err)
	}
	return nil
}

// CompleteWhole implements PartUploader: Finalize checks the object.
func (d *Dynamo) CompleteWhole(ctx context.Context, id int64, _ int64) error {
	return d.pendingByID(ctx, id)
}

// DownloadParts implements PartDownloader.
func (d *Dynamo) DownloadParts(ctx context.Context, id int64, ttl time.Duration) (PartsResponse, error) {
	e, parts, err := d.byID(ctx, id)
	switch {
	case err != nil:
		return PartsResponse{}, err
	case !e.Finalized:
		return PartsResponse{}, ErrNotFound
	case len(parts) == 0:
		return PartsResponse{}, &InvalidError{Field: "entry", Reason: "not kept in parts"}
	}
	return d.parts().presignGets(ctx, id, parts, ttl)
}

// archiveExists says whether entry e's archive is in the bucket; an
// error other than a miss counts as there (the safe side for a refusal).
func (d *Dynamo) archiveExists(ctx context.Context, e Entry) bool {
	if e.PartCount > 0 {
		return d.parts().hasParts(ctx, e.ID)
	}
	_, err := d.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &d.bucket, Key: aws.String(d.blobKey(e.ID))})
	return err == nil || !isNotFound(err)
}

// removeObjects deletes entry id's id item, its archive and its parts.
// Failures only leave garbage the bucket's lifecycle rule removes.
func (d *Dynamo) removeObjects(ctx context.Context, id int64) {
	if _, err := d.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &d.table, Key: idKey(id)}); err != nil {
		d.log.Warn("cache: deleting an id item failed", "id", id, "err", err)
	}
	b := d.parts()
	if err := b.deleteKeys(ctx, []string{d.blobKey(id)}); err != nil {
		d.log.Warn("cache: deleting an archive failed", "id", id, "err", err)
	}
	b.deletePrefix(ctx, b.partsDir(id))
}
