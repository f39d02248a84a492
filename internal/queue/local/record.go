package local

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// record is one message as stored in the messages and dead buckets.
type record struct {
	// due is when the message becomes visible (again): send time plus delay,
	// or receive time plus visibility timeout while in flight. For a dead
	// letter it is when it was dead-lettered.
	due      time.Time
	sentAt   time.Time
	receives int
	// inFlight marks a message delivered and not yet visible again. Open
	// releases such messages at once: their receiver died with the process.
	inFlight bool
	body     []byte
}

const (
	recordVersion    = 1
	recordHeaderSize = 1 + 1 + 8 + 8 + 4
	flagInFlight     = 1 << 0
)

var errCorruptRecord = errors.New("local queue: corrupt record")

func (r record) encode() []byte {
	buf := make([]byte, recordHeaderSize, recordHeaderSize+len(r.body))
	buf[0] = recordVersion
	if r.inFlight {
		buf[1] |= flagInFlight
	}
	binary.BigEndian.PutUint64(buf[2:], uint64(r.due.UnixNano()))
	binary.BigEndian.PutUint64(buf[10:], uint64(r.sentAt.UnixNano()))
	binary.BigEndian.PutUint32(buf[18:], uint32(r.receives))
	return append(buf, r.body...)
}

// decodeRecord copies what it needs: bbolt's slices die with the transaction.
func decodeRecord(buf []byte) (record, error) {
	if len(buf) < recordHeaderSize || buf[0] != recordVersion {
		return record{}, errCorruptRecord
	}
	return record{
		inFlight: buf[1]&flagInFlight != 0,
		due:      time.Unix(0, int64(binary.BigEndian.Uint64(buf[2:]))),
		sentAt:   time.Unix(0, int64(binary.BigEndian.Uint64(buf[10:]))),
		receives: int(binary.BigEndian.Uint32(buf[18:])),
		body:     append([]byte(nil), buf[recordHeaderSize:]...),
	}, nil
}

// messageKey orders messages by send order.
func messageKey(seq uint64) []byte {
	return binary.BigEndian.AppendUint64(nil, seq)
}

// dueKey orders the due index by visibility time, then send order, so the
// first key is always the next message to become visible.
func dueKey(due time.Time, seq uint64) []byte {
	key := binary.BigEndian.AppendUint64(make([]byte, 0, 16), uint64(due.UnixNano()))
	return binary.BigEndian.AppendUint64(key, seq)
}

func parseDueKey(key []byte) (time.Time, uint64, error) {
	if len(key) != 16 {
		return time.Time{}, 0, errCorruptRecord
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(key))), binary.BigEndian.Uint64(key[8:]), nil
}

func messageID(seq uint64) string { return strconv.FormatUint(seq, 10) }

// receipt names one delivery: the message and how many times it had been
// received then. A later delivery bumps the count, which makes older
// receipts stale.
func receipt(seq uint64, receives int) string {
	return messageID(seq) + ":" + strconv.Itoa(receives)
}

func parseReceipt(s string) (seq uint64, receives int, err error) {
	id, count, ok := strings.Cut(s, ":")
	if ok {
		seq, err = strconv.ParseUint(id, 10, 64)
	}
	if ok && err == nil {
		receives, err = strconv.Atoi(count)
	}
	if !ok || err != nil {
		return 0, 0, fmt.Errorf("%w: %q", ErrInvalidReceipt, s)
	}
	return seq, receives, nil
}

func bigEndian(key []byte) uint64 { return binary.BigEndian.Uint64(key) }
