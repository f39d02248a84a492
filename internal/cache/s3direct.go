package cache

import (
	"context"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// PartUploader is a store the runner machine uploads to straight, part by
// part, on presigned URLs: the cache agent on the machine sends each of
// the client's Azure blocks to the bucket as one plain object (parts.go),
// so no byte passes through runfleet (serve or a Lambda) and nothing is
// copied at commit.
type PartUploader interface {
	// PresignPart returns a URL (and the headers to send with it) that
	// uploads part (1–MaxEntryParts; WholeObject: the whole archive as one
	// object) of pending entry id, size bytes; the parts uploaded so far
	// and this one may not exceed limit.
	PresignPart(ctx context.Context, id int64, part int32, size, limit int64, ttl time.Duration) (string, http.Header, error)
	// PresignPieces presigns a block of size bytes as parts first, first+1,
	// … of PieceBytes each, in one call (the agent's blocks).
	PresignPieces(ctx context.Context, id int64, first int32, size, limit int64, ttl time.Duration) ([]PresignedPart, error)
	// CompleteParts makes these parts, in this order, the archive of
	// pending entry id.
	CompleteParts(ctx context.Context, id int64, order []int32, limit int64) error
	// CompleteWhole makes the object uploaded as WholeObject the archive.
	CompleteWhole(ctx context.Context, id int64, limit int64) error
}

// PartDownloader is a store whose entries may be kept in parts: a restore
// asks for presigned GETs of every part, in order, pinned to their ETags.
type PartDownloader interface {
	DownloadParts(ctx context.Context, id int64, ttl time.Duration) (PartsResponse, error)
}

func (s *S3) parts() partBucket {
	return partBucket{client: s.client, presign: s.presign, bucket: s.bucket, prefix: s.prefix, log: s.log}
}

// PresignPart implements PartUploader.
func (s *S3) PresignPart(ctx context.Context, id int64, part int32, size, limit int64, ttl time.Duration) (string, http.Header, error) {
	if err := s.pending(id); err != nil {
		return "", nil, err
	}
	return s.parts().presignPut(ctx, id, part, size, limit, ttl)
}

// PresignPieces implements PartUploader.
func (s *S3) PresignPieces(ctx context.Context, id int64, first int32, size, limit int64, ttl time.Duration) ([]PresignedPart, error) {
	if err := s.pending(id); err != nil {
		return nil, err
	}
	return s.parts().presignPieces(ctx, id, first, size, limit, ttl)
}

// CompleteParts implements PartUploader: the part list goes into the
// entry's meta object.
func (s *S3) CompleteParts(ctx context.Context, id int64, order []int32, limit int64) error {
	if err := s.pending(id); err != nil {
		return err
	}
	parts, err := s.parts().complete(ctx, id, order, limit)
	if err != nil {
		return err
	}
	return s.setObjects(ctx, id, parts)
}

// CompleteWhole implements PartUploader.
func (s *S3) CompleteWhole(ctx context.Context, id int64, limit int64) error {
	if err := s.pending(id); err != nil {
		return err
	}
	head, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: aws.String(s.blobKey(id))})
	if err != nil {
		return &InvalidError{Field: "upload", Reason: "the archive was not uploaded"}
	}
	if aws.ToInt64(head.ContentLength) > limit {
		return ErrTooLarge
	}
	return s.setParts(ctx, id, []string{"blob"})
}

// setObjects records an archive kept in parts.
func (s *S3) setObjects(ctx context.Context, id int64, parts []Part) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.pendingLocked(id)
	if err != nil {
		return err
	}
	return s.writeMeta(ctx, diskMeta{Entry: *e, Parts: []string{"parts"}, Objects: parts})
}

// DownloadParts implements PartDownloader.
func (s *S3) DownloadParts(ctx context.Context, id int64, ttl time.Duration) (PartsResponse, error) {
	m, err := s.finalizedMeta(ctx, id)
	if err != nil {
		return PartsResponse{}, err
	}
	if len(m.Objects) == 0 {
		return PartsResponse{}, &InvalidError{Field: "entry", Reason: "not kept in parts"}
	}
	return s.parts().presignGets(ctx, id, m.Objects, ttl)
}

// finalizedMeta reads finalized entry id's meta object.
func (s *S3) finalizedMeta(ctx context.Context, id int64) (diskMeta, error) {
	if _, ok := s.finalized(id); !ok {
		return diskMeta{}, ErrNotFound
	}
	m, err := s.readMeta(ctx, s.metaKey(id))
	if err != nil {
		return diskMeta{}, ErrNotFound
	}
	return m, nil
}

var (
	_ PartUploader   = (*S3)(nil)
	_ PartDownloader = (*S3)(nil)
)
