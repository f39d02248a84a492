package cache

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
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

// listParts is what S3 holds of an upload: part number to size and ETag.
func (d *Dynamo) listParts(ctx context.Context, id int64, upload string) (map[int32]types.Part, error) {
	got := map[int32]types.Part{}
	pages := s3.NewListPartsPaginator(d.client, &s3.ListPartsInput{Bucket: &d.bucket, Key: aws.String(d.blobKey(id)), UploadId: &upload})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("cache: list parts: %w", err)
		}
		for _, p := range page.Parts {
			got[aws.ToInt32(p.PartNumber)] = p
		}
	}
	return got, nil
}

// PresignPart implements PartUploader, as the S3 store does, with the
// upload's id in the index instead of in memory.
func (d *Dynamo) PresignPart(ctx context.Context, id int64, part int32, size, limit int64, ttl time.Duration) (string, http.Header, error) {
	switch {
	case part < 1 || part > maxParts:
		return "", nil, &InvalidError{Field: "part", Reason: fmt.Sprintf("%d is not in 1–%d", part, maxParts)}
	case size < 0:
		return "", nil, &InvalidError{Field: "size", Reason: "required"}
	case size > limit:
		return "", nil, ErrTooLarge
	}
	known, err := d.pendingByID(ctx, id)
	if err != nil {
		return "", nil, err
	}
	upload, err := d.uploadFor(ctx, id, known)
	if err != nil {
		return "", nil, err
	}
	parts, err := d.listParts(ctx, id, upload)
	if err != nil {
		return "", nil, err
	}
	var total int64
	for n, p := range parts {
		if n != part {
			total += aws.ToInt64(p.Size)
		}
	}
	if total+size > limit {
		return "", nil, ErrTooLarge
	}
	req, err := d.presign.PresignUploadPart(ctx, &s3.UploadPartInput{
		Bucket: &d.bucket, Key: aws.String(d.blobKey(id)), UploadId: &upload,
		PartNumber: aws.Int32(part), ContentLength: aws.Int64(size),
	}, s3.WithPresignExpires(ttl))
	if err != nil {
		return "", nil, fmt.Errorf("cache: presign a part: %w", err)
	}
	return req.URL, req.SignedHeader, nil
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
	have, err := d.listParts(ctx, id, upload)
	if err != nil {
		return err
	}
	done := make([]types.CompletedPart, len(order))
	var total int64
	for i, n := range order {
		p, ok := have[n]
		switch {
		case !ok:
			return &InvalidError{Field: "parts", Reason: "part " + strconv.Itoa(int(n)) + " was not uploaded"}
		case i > 0 && n <= order[i-1]:
			return &InvalidError{Field: "parts", Reason: "the parts are not in ascending order: the blocks' ids do not give their order"}
		case i < len(order)-1 && aws.ToInt64(p.Size) < minPartBytes:
			return &InvalidError{Field: "parts", Reason: fmt.Sprintf("a part but the last is under S3's %d-byte minimum", minPartBytes)}
		}
		total += aws.ToInt64(p.Size)
		done[i] = types.CompletedPart{ETag: p.ETag, PartNumber: aws.Int32(n)}
	}
	if total > limit {
		return ErrTooLarge
	}
	if _, err := d.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: &d.bucket, Key: aws.String(d.blobKey(id)), UploadId: &upload,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: done},
	}); err != nil {
		return fmt.Errorf("cache: complete the multipart upload: %w", err)
	}
	return nil
}
