package sqs

import (
	"encoding/base64"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Message attributes runfleet adds to what it sends.
const (
	// dueAtAttribute holds, on a chained delay, the Unix time in
	// milliseconds at which the message is really due.
	dueAtAttribute = "RunfleetDueAt"
	// encodingAttribute says how the body was made SQS-safe text; absent
	// means the body is sent as is.
	encodingAttribute = "RunfleetBodyEncoding"
	encodingBase64    = "base64"
)

var runfleetAttributes = []string{dueAtAttribute, encodingAttribute}

// wire is a body as SQS carries it.
type wire struct {
	body   string
	base64 bool
}

// toWire sends bodies SQS accepts as they are, so they stay readable in the
// console, and base64-encodes any other bytes (SQS rejects invalid UTF-8 and
// most control characters).
func toWire(body []byte) wire {
	if isSQSText(body) {
		return wire{body: string(body)}
	}
	return wire{body: base64.StdEncoding.EncodeToString(body), base64: true}
}

func (w wire) decode() []byte {
	if w.base64 {
		if body, err := base64.StdEncoding.DecodeString(w.body); err == nil {
			return body
		}
	}
	return []byte(w.body)
}

// isSQSText reports whether SQS accepts body as a message body: UTF-8 of
// #x9, #xA, #xD, #x20–#xD7FF, #xE000–#xFFFD and #x10000–#x10FFFF.
func isSQSText(body []byte) bool {
	if len(body) == 0 || !utf8.Valid(body) {
		return false
	}
	for _, r := range string(body) {
		switch {
		case r == 0x9, r == 0xA, r == 0xD:
		case r >= 0x20 && r <= 0xD7FF, r >= 0xE000 && r <= 0xFFFD, r >= 0x10000 && r <= 0x10FFFF:
		default:
			return false
		}
	}
	return true
}

// outgoing is what one SendMessage carries.
type outgoing struct {
	body  wire
	delay int32
	attrs map[string]types.MessageAttributeValue
}

// prepare aims w at dueAt: directly when SQS's delay reaches that far, else
// one maximal hop with the due time carried along.
func (q *Queue) prepare(w wire, dueAt time.Time) outgoing {
	out := outgoing{body: w, attrs: map[string]types.MessageAttributeValue{}}
	if w.base64 {
		out.attrs[encodingAttribute] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(encodingBase64)}
	}
	remaining := time.Until(dueAt)
	if remaining > q.maxDelay {
		out.delay = wholeSeconds(q.maxDelay, q.maxDelay)
		out.attrs[dueAtAttribute] = types.MessageAttributeValue{
			DataType:    aws.String("Number"),
			StringValue: aws.String(strconv.FormatInt(dueAt.UnixMilli(), 10)),
		}
	} else {
		out.delay = wholeSeconds(remaining, q.maxDelay)
	}
	if len(out.attrs) == 0 {
		out.attrs = nil
	}
	return out
}

func attributeString(attrs map[string]types.MessageAttributeValue, name string) string {
	if v, ok := attrs[name]; ok {
		return aws.ToString(v.StringValue)
	}
	return ""
}

func lambdaAttributeString(attrs map[string]events.SQSMessageAttribute, name string) string {
	if v, ok := attrs[name]; ok {
		return aws.ToString(v.StringValue)
	}
	return ""
}

// parseDueAt reads a dueAtAttribute value; ok is false when there is none.
func parseDueAt(value string) (time.Time, bool) {
	if value == "" {
		return time.Time{}, false
	}
	ms, err := strconv.ParseInt(value, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.UnixMilli(ms), true
}

func parseReceiveCount(value string) int {
	n, err := strconv.Atoi(value)
	if err != nil {
		return 0
	}
	return n
}
