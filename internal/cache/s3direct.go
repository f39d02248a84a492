package cache

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// PartUploader is a store the runner machine uploads to straight, part by
// part, on presigned URLs: the cache agent on the machine turns the
// client's Azure blocks into the parts of one S3 multipart upload, so no
// byte passes through runfleet (serve or a Lambda) and nothing is copied
// at commit.
type PartUploader interface {
	// PresignPart returns a URL (and the headers to send with it) that
	// uploads part (1–10000) of pending entry id, size bytes; the parts
	// uploaded so far and this one may not exceed limit.
	PresignPart(ctx context.Context, id int64, part int32, size, limit int64, ttl time.Duration) (string, http.Header, error)
	// CompleteParts makes these parts, in this order (ascending), the
	// archive of pending entry id.
	CompleteParts(ctx context.Context, id int64, parts []int32, limit int64) error
}

// maxParts is S3's part number limit.
const maxParts = 10000

// s3Uploads are the multipart uploads of pending entries, by entry id.
type s3Uploads struct {
	mu  sync.Mutex
	ids map[int64]string
}

// uploadFor returns entry id's multipart upload, starting it on first use.
func (s *S3) uploadFor(ctx context.Context, id int64) (string, error) {
	s.direct.mu.Lock()
	defer s.direct.mu.Unlock()
	if u, ok := s.direct.ids[id]; ok {
		return u, nil
	}
	out, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &s.bucket, Key: aws.String(s.blobKey(id))})
	if err != nil {
		return "", fmt.Errorf("cache: start a multipart upload: %w", err)
	}
	if s.direct.ids == nil {
		s.direct.ids = map[int64]string{}
	}
	s.direct.ids[id] = aws.ToString(out.UploadId)
	return s.direct.ids[id], nil
}

// listParts is what S3 holds of an upload: part number to size and ETag.
func (s *S3) listParts(ctx context.Context, id int64, upload string) (map[int32]types.Part, error) {
	got := map[int32]types.Part{}
	pages := s3.NewListPartsPaginator(s.client, &s3.ListPartsInput{Bucket: &s.bucket, Key: aws.String(s.blobKey(id)), UploadId: &upload})
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

// PresignPart implements PartUploader.
func (s *S3) PresignPart(ctx context.Context, id int64, part int32, size, limit int64, ttl time.Duration) (string, http.Header, error) {
	if err := s.pending(id); err != nil {
		return "", nil, err
	}
	switch {
	case part < 1 || part > maxParts:
		return "", nil, &InvalidError{Field: "part", Reason: fmt.Sprintf("%d is not in 1–%d", part, maxParts)}
	case size < 0:
		return "", nil, &InvalidError{Field: "size", Reason: "required"}
	case size > limit:
		return "", nil, ErrTooLarge
	}
	upload, err := s.uploadFor(ctx, id)
	if err != nil {
		return "", nil, err
	}
	// The entry's limit counts the parts already there (one uploaded
	// again replaces itself); parts presigned at once can each pass, and
	// CompleteParts takes no archive over the limit.
	parts, err := s.listParts(ctx, id, upload)
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
	req, err := s.presign.PresignUploadPart(ctx, &s3.UploadPartInput{
		Bucket: &s.bucket, Key: aws.String(s.blobKey(id)), UploadId: &upload,
		PartNumber: aws.Int32(part), ContentLength: aws.Int64(size),
	}, s3.WithPresignExpires(ttl))
	if err != nil {
		return "", nil, fmt.Errorf("cache: presign a part: %w", err)
	}
	return req.URL, req.SignedHeader, nil
}

// CompleteParts implements PartUploader.
func (s *S3) CompleteParts(ctx context.Context, id int64, order []int32, limit int64) error {
	if err := s.pending(id); err != nil {
		return err
	}
	if len(order) == 0 {
		return &InvalidError{Field: "parts", Reason: "empty"}
	}
	s.direct.mu.Lock()
	upload, ok := s.direct.ids[id]
	s.direct.mu.Unlock()
	if !ok {
		return &InvalidError{Field: "parts", Reason: "no part was uploaded"}
	}
	have, err := s.listParts(ctx, id, upload)
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
	if _, err := s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: &s.bucket, Key: aws.String(s.blobKey(id)), UploadId: &upload,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: done},
	}); err != nil {
		return fmt.Errorf("cache: complete the multipart upload: %w", err)
	}
	s.direct.mu.Lock()
	delete(s.direct.ids, id)
	s.direct.mu.Unlock()
	return s.setParts(ctx, id, []string{"blob"})
}

// abortUpload drops entry id's unfinished multipart upload, if any (the
// bucket's lifecycle rule catches what a crash leaves).
func (s *S3) abortUpload(ctx context.Context, id int64) {
	s.direct.mu.Lock()
	upload, ok := s.direct.ids[id]
	delete(s.direct.ids, id)
	s.direct.mu.Unlock()
	if ok {
		_, _ = s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &s.bucket, Key: aws.String(s.blobKey(id)), UploadId: &upload})
	}
}

var _ PartUploader = (*S3)(nil)
