package cache

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// uploadFor returns entry id's multipart upload, starting it on first use.
// Concurrent presigns (the SDK sends 8 blocks at once, each maybe to
// another Lambda instance) may each start one: the first to record its id
// on the id item wins, the others abort theirs and use it.
func (d *Dynamo) uploadFor(ctx context.Context, id int64, known string) (string, error) {
	if known != "" {
		return known, nil
	}
	key := d.blobKey(id)
	out, err := d.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &d.bucket, Key: &key})
	if err != nil {
		return "", fmt.Errorf("cache: start a multipart upload: %w", err)
	}
	mine := aws.ToString(out.UploadId)
	_, err = d.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &d.table, Key: idKey(id),
		UpdateExpression:          aws.String("SET upload = :u"),
		ConditionExpression:       aws.String("attribute_exists(pk) AND attribute_not_exists(upload)"),
		ExpressionAttributeValues: map[string]dtypes.AttributeValue{":u": sAttr(mine)},
	})
	if err == nil {
		return mine, nil
	}
	_, _ = d.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &d.bucket, Key: &key, UploadId: &mine})
	if !conditionFailed(err) {
		return "", fmt.Errorf("cache: record the multipart upload: %w", err)
	}
	d.log.Info("cache: another presign started the upload first; ours is aborted", "id", id)
	upload, err := d.pendingByID(ctx, id)
	if err != nil {
		return "", err
	}
	if upload == "" {
		return "", ErrNotFound
	}
	return upload, nil
}

// PresignPart implements PartUploader, as the S3 store does, with the
// upload's id in the index instead of in memory.
func (d *Dynamo) PresignPart(ctx context.Context, id int64, part int32, size, limit int64, ttl time.Duration) (string, http.Header, error) {
	if err := checkPartRequest(part, size, limit); err != nil {
		return "", nil, err
	}
	known, err := d.pendingByID(ctx, id)
	if err != nil {
		return "", nil, err
	}
	upload, err := d.uploadFor(ctx, id, known)
	if err != nil {
		return "", nil, err
	}
	return presignUploadPart(ctx, d.client, d.presign, d.bucket, d.blobKey(id), upload, part, size, limit, ttl)
}

// CompleteParts implements PartUploader: sizes and ETags come from S3,
// never from the caller.
func (d *Dynamo) CompleteParts(ctx context.Context, id int64, order []int32, limit int64) error {
	if len(order) == 0 {
		return &InvalidError{Field: "parts", Reason: "empty"}
	}
	upload, err := d.pendingByID(ctx, id)
	if err != nil {
		return err
	}
	if upload == "" {
		return &InvalidError{Field: "parts", Reason: "no part was uploaded"}
	}
	return completeUpload(ctx, d.client, d.bucket, d.blobKey(id), upload, order, limit)
}
