package cache

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// The steps of a multipart upload whose parts the machine's agent sends
// straight to the bucket, shared by the bucket-backed stores (S3 for
// serve, Dynamo on AWS): they differ only in where an entry's upload id
// is kept (memory, the DynamoDB index).

// checkPartRequest refuses a part number or size no upload takes.
func checkPartRequest(part int32, size, limit int64) error {
	switch {
	case part < 1 || part > maxParts:
		return &InvalidError{Field: "part", Reason: fmt.Sprintf("%d is not in 1–%d", part, maxParts)}
	case size < 0:
		return &InvalidError{Field: "size", Reason: "required"}
	case size > limit:
		return ErrTooLarge
	}
	return nil
}

// listUploadParts is what S3 holds of an upload: part number to size and
// ETag.
func listUploadParts(ctx context.Context, client *s3.Client, bucket, key, upload string) (map[int32]types.Part, error) {
	got := map[int32]types.Part{}
	pages := s3.NewListPartsPaginator(client, &s3.ListPartsInput{Bucket: &bucket, Key: &key, UploadId: &upload})
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

// presignUploadPart presigns part of upload for size bytes. The entry's
// limit counts the parts already there (one uploaded again replaces
// itself); parts presigned at once can each pass, and completeUpload
// takes no archive over the limit.
func presignUploadPart(ctx context.Context, client *s3.Client, presign *s3.PresignClient, bucket, key, upload string, part int32, size, limit int64, ttl time.Duration) (string, http.Header, error) {
	parts, err := listUploadParts(ctx, client, bucket, key, upload)
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
	req, err := presign.PresignUploadPart(ctx, &s3.UploadPartInput{
		Bucket: &bucket, Key: &key, UploadId: &upload,
		PartNumber: aws.Int32(part), ContentLength: aws.Int64(size),
	}, s3.WithPresignExpires(ttl))
	if err != nil {
		return "", nil, fmt.Errorf("cache: presign a part: %w", err)
	}
	return req.URL, req.SignedHeader, nil
}

// completeUpload completes upload from the parts in order: sizes and
// ETags come from S3, never from the caller.
func completeUpload(ctx context.Context, client *s3.Client, bucket, key, upload string, order []int32, limit int64) error {
	have, err := listUploadParts(ctx, client, bucket, key, upload)
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
	if _, err := client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: &bucket, Key: &key, UploadId: &upload,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: done},
	}); err != nil {
		return fmt.Errorf("cache: complete the multipart upload: %w", err)
	}
	return nil
}
