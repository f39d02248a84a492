package cache

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// S3 is a Store on an S3 bucket (or any S3-compatible store), for
// embedded mode. Uploads come through serve — the client's storage SDK
// speaks Azure's block protocol, which S3 does not (docs/actions-cache.md)
// — and are streamed to S3 as they arrive; downloads go straight from S3
// to the runner on a presigned GET (DownloadURLer). Each entry is a meta
// object (meta/<id>.json), its archive (blobs/<id>) and, until it is
// finalized, its staged blocks (staging/<id>/<block>); committing a block
// list assembles the archive inside S3 (a multipart upload of part copies),
// so no byte is read back. An archive the machine's cache agent uploaded
// straight to the bucket is its parts instead (parts/<id>/<n>, parts.go),
// listed in the meta object. The index is rebuilt from the meta objects.
type S3 struct {
	client  *s3.Client
	presign *s3.PresignClient
	bucket  string
	prefix  string
	policy  EvictionPolicy
	now     func() time.Time
	log     *slog.Logger
	index
}

// copyConcurrency is how many part copies a commit runs at once.
const copyConcurrency = 8

// minPartBytes is S3's smallest multipart part but the last: the SDK's
// 64 MiB blocks are far above it.
const minPartBytes = 5 << 20

// OpenS3 opens a store in bucket under prefix and reads its index.
func OpenS3(ctx context.Context, client *s3.Client, bucket, prefix string, p EvictionPolicy, now func() time.Time, log *slog.Logger) (*S3, error) {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if p.PendingTTL <= 0 {
		p.PendingTTL = time.Hour
	}
	st := &S3{client: client, presign: s3.NewPresignClient(client), bucket: bucket, prefix: prefix, policy: p, now: now, log: log, index: newIndex(now)}
	pages := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: aws.String(prefix + "meta/")})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("cache: open s3://%s/%s: %w", bucket, prefix, err)
		}
		for _, o := range page.Contents {
			m, err := st.readMeta(ctx, aws.ToString(o.Key))
			if err != nil {
				log.Warn("cache: skipping an unreadable meta object", "key", aws.ToString(o.Key), "err", err)
				continue
			}
			st.addLocked(m.Entry)
		}
	}
	return st, nil
}

func (s *S3) metaKey(id int64) string {
	return s.prefix + "meta/" + strconv.FormatInt(id, 10) + ".json"
}
func (s *S3) blobKey(id int64) string { return s.prefix + "blobs/" + strconv.FormatInt(id, 10) }
func (s *S3) stageDir(id int64) string {
	return s.prefix + "staging/" + strconv.FormatInt(id, 10) + "/"
}

func (s *S3) readMeta(ctx context.Context, key string) (diskMeta, error) {
	var m diskMeta
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: &key})
	if err != nil {
		return m, err
	}
	defer out.Body.Close()
	err = json.NewDecoder(io.LimitReader(out.Body, 1<<20)).Decode(&m)
	return m, err
}

func (s *S3) writeMeta(ctx context.Context, m diskMeta) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	_, err = s.client.PutObject(ctx, &s3.PutObjectInput{Bucket: &s.bucket, Key: aws.String(s.metaKey(m.ID)), Body: bytes.NewReader(b)})
	return err
}

// Reserve implements Store.
func (s *S3) Reserve(ctx context.Context, ref Ref) (Entry, error) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	stale, err := s.admitLocked(ref, now, s.policy.PendingTTL)
	if err != nil {
		return Entry{}, err
	}
	if stale != 0 {
		s.removeLocked(ctx, stale)
	}
	id, err := newID()
	if err != nil {
		return Entry{}, fmt.Errorf("cache: reserve: %w", err)
	}
	e := Entry{Ref: ref, ID: id, Created: now, LastAccess: now}
	if err := s.writeMeta(ctx, diskMeta{Entry: e}); err != nil {
		return Entry{}, fmt.Errorf("cache: reserve: %w", err)
	}
	s.addLocked(e)
	return e, nil
}

// put streams r to key: S3 needs the length up front, which the SDK's
// requests always carry.
func (s *S3) put(ctx context.Context, id int64, key string, r io.Reader, size, limit int64) (int64, error) {
	if err := s.pending(id); err != nil {
		return 0, err
	}
	switch {
	case size < 0:
		return 0, &InvalidError{Field: "Content-Length", Reason: "required by the S3 store"}
	case size > limit:
		return 0, ErrTooLarge
	}
	counted := &countingReader{r: io.LimitReader(r, size)}
	_, err := s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: &s.bucket, Key: &key, Body: counted, ContentLength: aws.Int64(size),
	}, streamed)
	if err == nil && counted.n != size {
		err = &InvalidError{Field: "body", Reason: fmt.Sprintf("%d bytes, Content-Length said %d", counted.n, size)}
	}
	if err != nil {
		var ie *InvalidError
		if errors.As(err, &ie) {
			return counted.n, err
		}
		return counted.n, fmt.Errorf("cache: put %s: %w", key, err)
	}
	return size, nil
}

// streamed lets PutObject send a body it cannot rewind: the payload is not
// hashed into the signature (it would have to be read twice, or held) nor
// checksummed in a trailer (which S3 takes only over TLS); TLS, where the
// endpoint has it, protects it in transit.
func streamed(o *s3.Options) {
	o.APIOptions = append(o.APIOptions, v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware)
	o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	return n, err
}

// PutBlob implements Store.
func (s *S3) PutBlob(ctx context.Context, id int64, r io.Reader, size, limit int64) (int64, error) {
	n, err := s.put(ctx, id, s.blobKey(id), r, size, limit)
	if err != nil {
		return n, err
	}
	return n, s.setParts(ctx, id, []string{"blob"})
}

// PutBlock implements Store.
func (s *S3) PutBlock(ctx context.Context, id int64, blockID string, r io.Reader, size, limit int64) (int64, error) {
	if err := validBlockID(blockID); err != nil {
		return 0, err
	}
	key := s.stageDir(id) + blockFile(blockID)
	// The limit is the entry's: the blocks staged so far count (a block
	// staged again replaces itself). Blocks arriving at once can each pass;
	// the overshoot is bounded by the SDK's 8 uploads in flight, and
	// finalize takes no archive over the limit.
	staged, err := s.stagedBytes(ctx, id, key)
	if err != nil {
		return 0, err
	}
	if size >= 0 && staged+size > limit {
		return 0, ErrTooLarge
	}
	return s.put(ctx, id, key, r, size, limit)
}

// stagedBytes sums the sizes of entry id's staged blocks but replacing.
func (s *S3) stagedBytes(ctx context.Context, id int64, replacing string) (int64, error) {
	var total int64
	pages := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: aws.String(s.stageDir(id))})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return 0, fmt.Errorf("cache: list staged blocks: %w", err)
		}
		for _, o := range page.Contents {
			if aws.ToString(o.Key) != replacing {
				total += aws.ToInt64(o.Size)
			}
		}
	}
	return total, nil
}

// CommitBlocks implements Store: the blocks become the archive's parts by
// copies inside S3.
func (s *S3) CommitBlocks(ctx context.Context, id int64, blockIDs []string) error {
	if len(blockIDs) == 0 {
		return &InvalidError{Field: "block list", Reason: "empty"}
	}
	if err := s.pending(id); err != nil {
		return err
	}
	keys := make([]string, len(blockIDs))
	for i, b := range blockIDs {
		if err := validBlockID(b); err != nil {
			return err
		}
		keys[i] = s.stageDir(id) + blockFile(b)
		head, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: &keys[i]})
		if err != nil {
			return &InvalidError{Field: "block list", Reason: "names a block that was not staged"}
		}
		if i < len(keys)-1 && aws.ToInt64(head.ContentLength) < minPartBytes {
			return &InvalidError{Field: "block list", Reason: fmt.Sprintf("a block but the last is under S3's %d-byte part minimum", minPartBytes)}
		}
	}
	blob := s.blobKey(id)
	if len(keys) == 1 {
		if _, err := s.client.CopyObject(ctx, &s3.CopyObjectInput{Bucket: &s.bucket, Key: &blob, CopySource: aws.String(s.bucket + "/" + keys[0])}); err != nil {
			return fmt.Errorf("cache: commit blocks: %w", err)
		}
		return s.setParts(ctx, id, []string{"blob"})
	}
	mp, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &s.bucket, Key: &blob})
	if err != nil {
		return fmt.Errorf("cache: commit blocks: %w", err)
	}
	parts := make([]types.CompletedPart, len(keys))
	// The copies run inside S3 but each is a round trip that lasts as long
	// as S3 takes to copy 64 MiB: 8 at a time, as the SDK uploaded them.
	errs := make([]error, len(keys))
	sem := make(chan struct{}, copyConcurrency)
	var wg sync.WaitGroup
	for i, k := range keys {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int, k string) {
			defer wg.Done()
			defer func() { <-sem }()
			out, err := s.client.UploadPartCopy(ctx, &s3.UploadPartCopyInput{
				Bucket: &s.bucket, Key: &blob, UploadId: mp.UploadId,
				PartNumber: aws.Int32(int32(i + 1)), CopySource: aws.String(s.bucket + "/" + k),
			})
			if err != nil {
				errs[i] = err
				return
			}
			parts[i] = types.CompletedPart{ETag: out.CopyPartResult.ETag, PartNumber: aws.Int32(int32(i + 1))}
		}(i, k)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		_, _ = s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &s.bucket, Key: &blob, UploadId: mp.UploadId})
		return fmt.Errorf("cache: commit blocks: %w", err)
	}
	if _, err := s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: &s.bucket, Key: &blob, UploadId: mp.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	}); err != nil {
		return fmt.Errorf("cache: commit blocks: %w", err)
	}
	return s.setParts(ctx, id, []string{"blob"})
}

func (s *S3) setParts(ctx context.Context, id int64, parts []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.pendingLocked(id)
	if err != nil {
		return err
	}
	return s.writeMeta(ctx, diskMeta{Entry: *e, Parts: parts})
}

// Finalize implements Store.
func (s *S3) Finalize(ctx context.Context, ref Ref, size int64) (Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.finalizeLocked(ref, size, s.now(),
		func(id int64) (diskMeta, error) { return s.readMeta(ctx, s.metaKey(id)) },
		func(id int64, m diskMeta) (int64, error) {
			if len(m.Objects) > 0 {
				var total int64
				for _, p := range m.Objects {
					total += p.Size
				}
				return total, nil
			}
			head, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: aws.String(s.blobKey(id))})
			if err != nil {
				return 0, err
			}
			return aws.ToInt64(head.ContentLength), nil
		},
		func(m diskMeta) error { return s.writeMeta(ctx, m) })
	if err != nil {
		return Entry{}, err
	}
	s.parts().deletePrefix(ctx, s.stageDir(e.ID))
	return e, nil
}

// Open implements Store; the handler prefers DownloadURL, and the agent
// DownloadParts. An archive in parts is streamed part after part, each
// pinned to its recorded ETag.
func (s *S3) Open(ctx context.Context, id int64) (io.ReadCloser, int64, error) {
	e, ok := s.finalized(id)
	if !ok {
		return nil, 0, ErrNotFound
	}
	m, err := s.readMeta(ctx, s.metaKey(id))
	if err != nil {
		return nil, 0, ErrNotFound
	}
	if len(m.Objects) > 0 {
		return s.parts().openParts(ctx, id, m.Objects), e.Size, nil
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: aws.String(s.blobKey(id))})
	if err != nil {
		return nil, 0, ErrNotFound
	}
	return out.Body, e.Size, nil
}

// DownloadURL implements DownloadURLer: a presigned GET of the archive;
// ErrInParts for an archive in parts.
func (s *S3) DownloadURL(ctx context.Context, id int64, ttl time.Duration) (string, error) {
	m, err := s.finalizedMeta(ctx, id)
	if err != nil {
		return "", err
	}
	if len(m.Objects) > 0 {
		return "", ErrInParts
	}
	req, err := s.presign.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: aws.String(s.blobKey(id))}, s3.WithPresignExpires(ttl))
	if err != nil {
		return "", fmt.Errorf("cache: presign: %w", err)
	}
	return req.URL, nil
}

// removeObjects deletes entry id's meta object, archive, staged blocks
// and parts; failures only leave garbage the bucket's lifecycle rule or
// the next eviction removes.
func (s *S3) removeObjects(ctx context.Context, id int64) {
	b := s.parts()
	if err := b.deleteKeys(ctx, []string{s.blobKey(id), s.metaKey(id)}); err != nil {
		s.log.Warn("cache: deleting an entry's objects failed", "id", id, "err", err)
	}
	b.deletePrefix(ctx, s.stageDir(id))
	b.deletePrefix(ctx, b.partsDir(id))
}

// removeLocked forgets entry id and deletes its objects; s.mu is held.
func (s *S3) removeLocked(ctx context.Context, id int64) {
	if _, ok := s.forgetLocked(id); ok {
		s.removeObjects(ctx, id)
	}
}

// Evict implements Store.
func (s *S3) Evict(ctx context.Context) (EvictStats, error) {
	gone, st := s.evict(s.now(), s.policy)
	for _, e := range gone {
		s.removeObjects(ctx, e.ID)
	}
	if st.Entries > 0 {
		s.log.Info("cache: evicted", "entries", st.Entries, "bytes", st.Bytes)
	}
	return st, nil
}

var (
	_ Store         = (*S3)(nil)
	_ DownloadURLer = (*S3)(nil)
)
