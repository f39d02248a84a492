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

// errRangeNotSatisfiable: a range that starts at or after the blob's end.
var errRangeNotSatisfiable = errors.New("range not satisfiable")

// blobRange is the part of a blob of size bytes a download asks for:
// start and n bytes from it; partial is false for the whole blob (no
// range asked, or one that covers it all from 0 — answered as 200, which
// both protocols allow). x-ms-range wins over Range, as in Azure. One
// range only: "bytes=N-", "bytes=N-M" or "bytes=-N" (the last N).
func blobRange(h http.Header, size int64) (start, n int64, partial bool, err error) {
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
			return 0, 0, false, errRangeNotSatisfiable
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
			return 0, 0, false, errRangeNotSatisfiable
		}
	}
	n = end - start + 1
	return start, n, start != 0 || n != size, nil
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
