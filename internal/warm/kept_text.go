package warm

import (
	"bytes"
	"compress/flate"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
)

// keptFormat is the first number of an encoded Kept: a reader refuses a
// format it does not know rather than misread it.
const keptFormat = 1

// maxKeptMinutes bounds what a decoded Kept may hold (ten weeks): a record
// is read every pass, and one that claims more is not one runfleet wrote.
const maxKeptMinutes = 10 * 7 * 24 * 60

// Encode writes k as text a store keeps as an opaque value: the format,
// the start (in minutes since 1970), the number of minutes and each
// minute's count, as varints, deflated (most minutes are 0), in base64.
// Four weeks of a busy pool's minutes are a few kilobytes.
func (k Kept) Encode() string {
	var raw []byte
	raw = binary.AppendUvarint(raw, keptFormat)
	raw = binary.AppendVarint(raw, k.Start.Unix()/60)
	raw = binary.AppendUvarint(raw, uint64(len(k.Counts)))
	for _, c := range k.Counts {
		raw = binary.AppendUvarint(raw, uint64(max(c, 0)))
	}
	var out bytes.Buffer
	w, _ := flate.NewWriter(&out, flate.BestCompression) // the level is valid
	_, _ = w.Write(raw)                                  // a bytes.Buffer does not fail
	_ = w.Close()
	return base64.StdEncoding.EncodeToString(out.Bytes())
}

// DecodeKept reads what Encode wrote. An empty string is nothing kept.
func DecodeKept(s string) (Kept, error) {
	if s == "" {
		return Kept{}, nil
	}
	packed, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return Kept{}, fmt.Errorf("warm: kept arrivals: %w", err)
	}
	// A count is at most a few bytes: the raw form of maxKeptMinutes fits
	// well within this, and a record that inflates past it is refused.
	raw, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(packed)), 4*maxKeptMinutes+32))
	if err != nil {
		return Kept{}, fmt.Errorf("warm: kept arrivals: %w", err)
	}
	r := bytes.NewReader(raw)
	format, err := binary.ReadUvarint(r)
	if err != nil || format != keptFormat {
		return Kept{}, fmt.Errorf("warm: kept arrivals: format %d not known (%v)", format, err)
	}
	start, err := binary.ReadVarint(r)
	if err != nil {
		return Kept{}, fmt.Errorf("warm: kept arrivals: start: %w", err)
	}
	n, err := binary.ReadUvarint(r)
	if err != nil || n > maxKeptMinutes {
		return Kept{}, fmt.Errorf("warm: kept arrivals: %d minutes (at most %d): %v", n, maxKeptMinutes, err)
	}
	k := Kept{Start: time.Unix(start*60, 0).UTC(), Counts: make([]int, n)}
	for i := range k.Counts {
		c, err := binary.ReadUvarint(r)
		if err != nil {
			return Kept{}, fmt.Errorf("warm: kept arrivals: minute %d of %d: %w", i, n, err)
		}
		if c > maxKeptPerMinute {
			return Kept{}, fmt.Errorf("warm: kept arrivals: %d jobs in minute %d (at most %d)", c, i, maxKeptPerMinute)
		}
		k.Counts[i] = int(c)
	}
	if r.Len() != 0 {
		return Kept{}, errors.New("warm: kept arrivals: bytes after the last minute")
	}
	return k, nil
}

// maxKeptPerMinute bounds one minute's count as read: GitHub queues at
// most 256 jobs per workflow run, and no pool's minute holds thousands.
const maxKeptPerMinute = 1 << 20
