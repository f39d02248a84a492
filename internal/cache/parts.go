package cache

// An entry the machine's agent uploads straight to the bucket is kept as
// plain objects, one per block the client's SDK sent (its parts), under
// <prefix>parts/<id>/, not as one object made by a multipart upload: S3
// takes the parts in parallel on presigned PUTs and completion copies
// nothing (no CompleteMultipartUpload, which moto runs as a copy of the
// whole archive), and a restore fetches them in parallel too. The list of
// parts (number, size, ETag), in the archive's order, is the entry's
// record in the index; a restore is pinned to those ETags, so a part
// changed after the save fails the restore instead of serving other
// bytes. Shared by the bucket-backed stores (S3 for serve, Dynamo on AWS).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// Part is one object of an entry kept in parts: the number the agent gave
// it (a name, not a position), its size and the ETag S3 gave it.
type Part struct {
	N    int32  `json:"n"`
	Size int64  `json:"size"`
	ETag string `json:"etag"`
}

// PartURL is a presigned GET of one part, pinned to its ETag: the request
// must carry Headers (If-Match among them).
type PartURL struct {
	URL     string              `json:"url"`
	Headers map[string][]string `json:"headers,omitempty"`
	Size    int64               `json:"size"`
	ETag    string              `json:"etag"`
}

// PartsResponse is the answer to a restore's parts call: the archive's
// size and its parts in order.
type PartsResponse struct {
	Size  int64     `json:"size"`
	Parts []PartURL `json:"parts"`
}

// PieceBytes is the most one part object of a block holds: the agent
// sends each of the SDK's 64 MiB blocks as parts of this size, so a
// restore's ranged GET of this size reads one whole object (S3 serves any
// range alike; an emulator that reads the whole object for every range,
// moto, does eight times the work on 64 MiB objects).
const PieceBytes = 8 << 20

// PresignedPart is one part's presigned PUT, its Content-Length signed.
type PresignedPart struct {
	Part    int32               `json:"part"`
	Size    int64               `json:"size"`
	URL     string              `json:"url"`
	Headers map[string][]string `json:"headers,omitempty"`
}

// WholeObject is the part "number" of a single-shot upload: the archive
// is one object at the entry's blob key, restored by one presigned GET.
const WholeObject int32 = 0

// MaxEntryParts bounds an entry's parts: the part list lives in one
// DynamoDB item (400 KB; a part is about 50 bytes there) and a restore's
// parts call answers with one presigned URL per part, which must fit a
// Lambda response (6 MB; a URL with a session token is up to ~1.6 KB).
// The client's SDK sends 64 MiB blocks, so 2,048 parts is 128 GiB.
const MaxEntryParts = 2048

// ErrInParts is DownloadURL's answer for an entry kept in parts: there is
// no one object to presign (the handler then hands out its own URL with
// PartsHint).
var ErrInParts = errors.New("cache: the entry is kept in parts")

// ErrNeedsAgent refuses a download through a function that never passes
// bytes: an entry in parts is restored by the machine's cache agent.
var ErrNeedsAgent = errors.New("cache: this entry is restored through runfleet's cache agent only")

// partBucket is where a store keeps its objects.
type partBucket struct {
	client  *s3.Client
	presign *s3.PresignClient
	bucket  string
	prefix  string
	log     *slog.Logger
}

func (b partBucket) blobKey(id int64) string { return b.prefix + "blobs/" + strconv.FormatInt(id, 10) }
func (b partBucket) partsDir(id int64) string {
	return b.prefix + "parts/" + strconv.FormatInt(id, 10) + "/"
}
func (b partBucket) partKey(id int64, n int32) string { return b.partsDir(id) + fmt.Sprintf("%05d", n) }

// checkPartRequest refuses a part number or size no entry takes.
func checkPartRequest(part int32, size, limit int64) error {
	switch {
	case part < 0 || part > MaxEntryParts:
		return &InvalidError{Field: "part", Reason: fmt.Sprintf("%d is not in 1–%d (%d parts at most)", part, MaxEntryParts, MaxEntryParts)}
	case size < 0:
		return &InvalidError{Field: "size", Reason: "required"}
	case size > limit:
		return ErrTooLarge
	}
	return nil
}

// listed is one object under an entry's parts prefix.
type listed struct {
	key  string
	size int64
	etag string
}

// list is what the bucket holds under entry id's parts prefix, by part
// number; keys that name no part are in other (to delete).
func (b partBucket) list(ctx context.Context, id int64) (map[int32]listed, []string, error) {
	got := map[int32]listed{}
	var other []string
	dir := b.partsDir(id)
	pages := s3.NewListObjectsV2Paginator(b.client, &s3.ListObjectsV2Input{Bucket: &b.bucket, Prefix: &dir})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("cache: list parts: %w", err)
		}
		for _, o := range page.Contents {
			key := aws.ToString(o.Key)
			n, err := strconv.ParseInt(strings.TrimPrefix(key, dir), 10, 32)
			if err != nil || key != b.partKey(id, int32(n)) {
				other = append(other, key)
				continue
			}
			got[int32(n)] = listed{key: key, size: aws.ToInt64(o.Size), etag: aws.ToString(o.ETag)}
		}
	}
	return got, other, nil
}

// presignPut presigns a plain PutObject of part n (WholeObject: the blob)
// of entry id, size bytes, its Content-Length signed. The entry's limit
// counts the parts already there (one uploaded again replaces itself);
// parts presigned at once can each pass, and complete takes no archive
// over the limit.
func (b partBucket) presignPut(ctx context.Context, id int64, n int32, size, limit int64, ttl time.Duration) (string, http.Header, error) {
	if err := checkPartRequest(n, size, limit); err != nil {
		return "", nil, err
	}
	key := b.blobKey(id)
	if n != WholeObject {
		have, _, err := b.list(ctx, id)
		if err != nil {
			return "", nil, err
		}
		var total int64
		for m, p := range have {
			if m != n {
				total += p.size
			}
		}
		if total+size > limit {
			return "", nil, ErrTooLarge
		}
		key = b.partKey(id, n)
	}
	req, err := b.presign.PresignPutObject(ctx, &s3.PutObjectInput{Bucket: &b.bucket, Key: &key, ContentLength: aws.Int64(size)}, s3.WithPresignExpires(ttl))
	if err != nil {
		return "", nil, fmt.Errorf("cache: presign a part: %w", err)
	}
	return req.URL, req.SignedHeader, nil
}

// presignPieces presigns a block of size bytes as parts first, first+1, …
// of PieceBytes each (the last shorter; one part for an empty block), in
// one call: one listing holds the entry's limit over the parts already
// there but these.
func (b partBucket) presignPieces(ctx context.Context, id int64, first int32, size, limit int64, ttl time.Duration) ([]PresignedPart, error) {
	if err := checkPartRequest(first, size, limit); err != nil {
		return nil, err
	}
	k := int32(max(1, (size+PieceBytes-1)/PieceBytes))
	if first < 1 || first > MaxEntryParts-k+1 {
		return nil, &InvalidError{Field: "part", Reason: fmt.Sprintf("parts %d–%d are not in 1–%d (%d parts at most)", first, first+k-1, MaxEntryParts, MaxEntryParts)}
	}
	have, _, err := b.list(ctx, id)
	if err != nil {
		return nil, err
	}
	var total int64
	for m, p := range have {
		if m < first || m >= first+k {
			total += p.size
		}
	}
	if total+size > limit {
		return nil, ErrTooLarge
	}
	out := make([]PresignedPart, k)
	left := size
	for i := range out {
		n, sz := first+int32(i), min(left, PieceBytes)
		left -= sz
		req, err := b.presign.PresignPutObject(ctx, &s3.PutObjectInput{Bucket: &b.bucket, Key: aws.String(b.partKey(id, n)), ContentLength: aws.Int64(sz)}, s3.WithPresignExpires(ttl))
		if err != nil {
			return nil, fmt.Errorf("cache: presign a part: %w", err)
		}
		out[i] = PresignedPart{Part: n, Size: sz, URL: req.URL, Headers: req.SignedHeader}
	}
	return out, nil
}

// complete reads entry id's parts from the bucket — sizes and ETags from
// S3, never from the caller — and returns them in order: every part the
// order names must be there, at most MaxEntryParts, each once, at most
// limit bytes in all; objects under the prefix the order does not name
// (a block the client dropped) are deleted.
func (b partBucket) complete(ctx context.Context, id int64, order []int32, limit int64) ([]Part, error) {
	switch {
	case len(order) == 0:
		return nil, &InvalidError{Field: "parts", Reason: "empty"}
	case len(order) > MaxEntryParts:
		return nil, &InvalidError{Field: "parts", Reason: fmt.Sprintf("%d parts, at most %d", len(order), MaxEntryParts)}
	}
	have, other, err := b.list(ctx, id)
	if err != nil {
		return nil, err
	}
	parts := make([]Part, len(order))
	named := make(map[int32]bool, len(order))
	var total int64
	for i, n := range order {
		p, ok := have[n]
		switch {
		case named[n]:
			return nil, &InvalidError{Field: "parts", Reason: "part " + strconv.Itoa(int(n)) + " is named twice"}
		case !ok:
			return nil, &InvalidError{Field: "parts", Reason: "part " + strconv.Itoa(int(n)) + " was not uploaded"}
		}
		named[n] = true
		total += p.size
		parts[i] = Part{N: n, Size: p.size, ETag: p.etag}
	}
	if total > limit {
		return nil, ErrTooLarge
	}
	for n, p := range have {
		if !named[n] {
			other = append(other, p.key)
		}
	}
	if len(other) > 0 {
		if err := b.deleteKeys(ctx, other); err != nil {
			return nil, err
		}
	}
	return parts, nil
}

// presignGets presigns a GET of each part, pinned to its recorded ETag
// (If-Match, a signed header): S3 answers 412 for a part changed since.
func (b partBucket) presignGets(ctx context.Context, id int64, parts []Part, ttl time.Duration) (PartsResponse, error) {
	out := PartsResponse{Parts: make([]PartURL, len(parts))}
	for i, p := range parts {
		req, err := b.presign.PresignGetObject(ctx, &s3.GetObjectInput{
			Bucket: &b.bucket, Key: aws.String(b.partKey(id, p.N)), IfMatch: aws.String(p.ETag),
		}, s3.WithPresignExpires(ttl))
		if err != nil {
			return PartsResponse{}, fmt.Errorf("cache: presign: %w", err)
		}
		out.Parts[i] = PartURL{URL: req.URL, Headers: req.SignedHeader, Size: p.Size, ETag: p.ETag}
		out.Size += p.Size
	}
	return out, nil
}

// hasParts says whether anything is left under entry id's parts prefix;
// an error counts as there (the safe side for a refusal).
func (b partBucket) hasParts(ctx context.Context, id int64) bool {
	out, err := b.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &b.bucket, Prefix: aws.String(b.partsDir(id)), MaxKeys: aws.Int32(1)})
	return err != nil || len(out.Contents) > 0
}

// deleteKeys deletes keys, a thousand a request.
func (b partBucket) deleteKeys(ctx context.Context, keys []string) error {
	for len(keys) > 0 {
		batch := keys[:min(len(keys), 1000)]
		keys = keys[len(batch):]
		ids := make([]types.ObjectIdentifier, len(batch))
		for i := range batch {
			ids[i] = types.ObjectIdentifier{Key: aws.String(batch[i])}
		}
		out, err := b.client.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: &b.bucket, Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)}})
		if err != nil {
			return fmt.Errorf("cache: delete objects: %w", err)
		}
		if len(out.Errors) > 0 {
			return fmt.Errorf("cache: delete %s: %s", aws.ToString(out.Errors[0].Key), aws.ToString(out.Errors[0].Message))
		}
	}
	return nil
}

// deletePrefix removes every object under prefix (a list, then a
// DeleteObjects per page); failures only leave garbage the bucket's
// lifecycle rule or the next eviction removes.
func (b partBucket) deletePrefix(ctx context.Context, prefix string) {
	pages := s3.NewListObjectsV2Paginator(b.client, &s3.ListObjectsV2Input{Bucket: &b.bucket, Prefix: &prefix})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			b.log.Warn("cache: listing objects to delete failed", "prefix", prefix, "err", err)
			return
		}
		keys := make([]string, len(page.Contents))
		for i, o := range page.Contents {
			keys[i] = aws.ToString(o.Key)
		}
		if err := b.deleteKeys(ctx, keys); err != nil {
			b.log.Warn("cache: deleting objects failed", "prefix", prefix, "err", err)
			return
		}
	}
}

// openParts streams entry id's parts in order through runfleet (serve,
// for a client without the agent), each GET pinned to its ETag and held
// to its size: a part changed or cut short ends the stream with an error.
func (b partBucket) openParts(ctx context.Context, id int64, parts []Part) io.ReadCloser {
	return &bucketPartsReader{ctx: ctx, b: b, id: id, parts: parts}
}

type bucketPartsReader struct {
	ctx   context.Context
	b     partBucket
	id    int64
	parts []Part
	i     int
	cur   io.ReadCloser
	left  int64
}

func (r *bucketPartsReader) Read(p []byte) (int, error) {
	for {
		if r.cur == nil {
			if r.i == len(r.parts) {
				return 0, io.EOF
			}
			part := r.parts[r.i]
			out, err := r.b.client.GetObject(r.ctx, &s3.GetObjectInput{Bucket: &r.b.bucket, Key: aws.String(r.b.partKey(r.id, part.N)), IfMatch: aws.String(part.ETag)})
			if err != nil {
				return 0, fmt.Errorf("cache: part %d of entry %d (changed or gone since its save?): %w", part.N, r.id, err)
			}
			r.cur, r.left = out.Body, part.Size
		}
		n, err := r.cur.Read(p[:min(int64(len(p)), r.left+1)])
		r.left -= int64(n)
		switch {
		case r.left < 0:
			return 0, fmt.Errorf("cache: part %d of entry %d is longer than recorded", r.parts[r.i].N, r.id)
		case err == io.EOF && r.left > 0:
			return n, fmt.Errorf("cache: part %d of entry %d is shorter than recorded", r.parts[r.i].N, r.id)
		case err == io.EOF:
			_ = r.cur.Close()
			r.cur = nil
			r.i++
			if n > 0 {
				return n, nil
			}
			continue
		}
		return n, err
	}
}

func (r *bucketPartsReader) Close() error {
	if r.cur != nil {
		return r.cur.Close()
	}
	return nil
}
