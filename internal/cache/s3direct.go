package cache

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
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

// PresignPart implements PartUploader.
func (s *S3) PresignPart(ctx context.Context, id int64, part int32, size, limit int64, ttl time.Duration) (string, http.Header, error) {
	if err := s.pending(id); err != nil {
		return "", nil, err
	}
	if err := checkPartRequest(part, size, limit); err != nil {
		return "", nil, err
	}
	upload, err := s.uploadFor(ctx, id)
	if err != nil {
		return "", nil, err
	}
	return presignUploadPart(ctx, s.client, s.presign, s.bucket, s.blobKey(id), upload, part, size, limit, ttl)
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
	if err := completeUpload(ctx, s.client, s.bucket, s.blobKey(id), upload, order, limit); err != nil {
		return err
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
