package testenv

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
)

// maxNameLength leaves room under SQS's 80-character queue-name limit for
// suffixes such as "-dlq" or ".fifo"; DynamoDB allows 255.
const maxNameLength = 64

// UniqueName returns a table or queue name that no other test, in this
// process or in another one sharing the same server, will use: prefix, the
// test's name, and a random suffix. It holds only characters both DynamoDB
// table names and SQS queue names accept.
func UniqueName(t testing.TB, prefix string) string {
	t.Helper()
	var random [4]byte
	if _, err := rand.Read(random[:]); err != nil {
		t.Fatalf("testenv: random name suffix: %v", err)
	}
	suffix := "-" + hex.EncodeToString(random[:])
	head := sanitizeName(prefix + "-" + t.Name())
	if room := maxNameLength - len(suffix); len(head) > room {
		head = head[:room]
	}
	return head + suffix
}

func sanitizeName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		default:
			return '-'
		}
	}, s)
}
