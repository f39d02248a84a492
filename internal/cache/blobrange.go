package cache

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// A download's byte range. The storage SDKs ask for one with Azure's
// x-ms-range header, not HTTP's Range: BuildKit's gha cache (Docker's
// `cache-from: type=gha`) reads a blob at an offset that way whenever it
// resumes or reads out of order. Answering such a request with the whole
// blob would hand the client other bytes than it asked for at that offset,
// so a range is honoured or refused, never ignored.

// ErrRangeNotSatisfiable: a range that starts at or after the blob's end
// (416).
var ErrRangeNotSatisfiable = errors.New("range not satisfiable")

// BlobRange is the part of a blob of size bytes a download asks for:
// start and n bytes from it; partial is false for the whole blob (no
// range asked, or one that covers it all from 0 — answered as 200, which
// both protocols allow). x-ms-range wins over Range, as in Azure. One
// range only: "bytes=N-", "bytes=N-M" or "bytes=-N" (the last N).
func BlobRange(h http.Header, size int64) (start, n int64, partial bool, err error) {
	spec := h.Get("x-ms-range")
	if spec == "" {
		spec = h.Get("Range")
	}
	if spec == "" {
		return 0, size, false, nil
	}
	rest, ok := strings.CutPrefix(strings.TrimSpace(spec), "bytes=")
	if !ok || strings.Contains(rest, ",") {
		return 0, 0, false, fmt.Errorf("range %q: want one range in bytes", spec)
	}
	first, last, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, 0, false, fmt.Errorf("range %q: no '-'", spec)
	}
	var end int64 // inclusive
	switch {
	case first == "":
		// The last N bytes.
		suffix, perr := strconv.ParseInt(last, 10, 64)
		if perr != nil || suffix <= 0 {
			return 0, 0, false, fmt.Errorf("range %q: bad suffix length", spec)
		}
		if size == 0 {
			return 0, 0, false, ErrRangeNotSatisfiable
		}
		start, end = max(size-suffix, 0), size-1
	default:
		s, perr := strconv.ParseInt(first, 10, 64)
		if perr != nil || s < 0 {
			return 0, 0, false, fmt.Errorf("range %q: bad start", spec)
		}
		start, end = s, size-1
		if last != "" {
			e, perr := strconv.ParseInt(last, 10, 64)
			if perr != nil || e < s {
				return 0, 0, false, fmt.Errorf("range %q: bad end", spec)
			}
			end = min(e, size-1)
		}
		if start >= size {
			return 0, 0, false, ErrRangeNotSatisfiable
		}
	}
	n = end - start + 1
	return start, n, start != 0 || n != size, nil
}

// ByteRange is the bytes of a blob a download answers: N from Start of
// Size; Partial when that is not the whole blob (206, not 200).
type ByteRange struct {
	Start, N, Size int64
	Partial        bool
}

// WantedRange is BlobRange as a ByteRange.
func WantedRange(h http.Header, size int64) (ByteRange, error) {
	start, n, partial, err := BlobRange(h, size)
	return ByteRange{Start: start, N: n, Size: size, Partial: partial}, err
}

// Status is the answer's status: 206 for a part of the blob, else 200.
func (b ByteRange) Status() int {
	if b.Partial {
		return http.StatusPartialContent
	}
	return http.StatusOK
}

// ContentRange is the Content-Range header of a partial answer.
func (b ByteRange) ContentRange() string {
	return fmt.Sprintf("bytes %d-%d/%d", b.Start, b.Start+b.N-1, b.Size)
}

// skipTo moves r, just opened at the blob's start, to offset start: by
// seeking when it can, else by reading past the bytes before it.
func skipTo(r io.Reader, start int64) error {
	if start == 0 {
		return nil
	}
	if s, ok := r.(io.Seeker); ok {
		_, err := s.Seek(start, io.SeekStart)
		return err
	}
	_, err := io.CopyN(io.Discard, r, start)
	return err
}
