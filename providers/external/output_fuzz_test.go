package external

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/runfleet/runfleet/providers"
)

// providerOutputSeeds are answers real GARM providers give (shapes from the
// protocol and the fake provider), valid and broken.
var providerOutputSeeds = []string{
	`{"provider_id":"i-0abc123","name":"runfleet-linux-x64-7000000001-1","os_type":"linux","os_name":"ubuntu",` +
		`"os_version":"22.04","os_arch":"amd64","status":"running",` +
		`"addresses":[{"address":"10.0.0.12","type":"private"},{"address":"203.0.113.7","type":"public"}]}`,
	`{"provider_id":"i-0abc123","name":"runfleet-linux-x64-7000000001-1","status":"error","provider_fault":"cXVvdGEgZXhjZWVkZWQ="}`,
	`{"provider_id":"i-1","name":"n","status":"stopped"}` + "\n",
	`{"provider_id":"i-1","name":"n","status":"unknown","provider_fault":null}`,
	`{"provider_id":"i-1","name":"n","status":"pending"}`,
	`{"name":"n","status":"running"}`,
	`{"provider_id":"i-1","status":"running"}`,
	`{"provider_id":"i-1","name":"n","status":"error","provider_fault":"quota exceeded"}`,
	`{"provider_id":"i-1","name":"n","status":"running"} trailing`,
	`{"provider_id":1,"name":"n","status":"running"}`,
	`[{"provider_id":"i-1","name":"a","status":"running"},{"provider_id":"i-2","name":"b","status":"stopped"}]`,
	`[{"provider_id":"i-1","name":"a","status":"running"},{"name":"b","status":"stopped"}]`,
	`[]`, `null`, ``, "  \n", `{`, `[`, `"running"`, `provider failed: no capacity`,
}

var protocolStatuses = []providers.MachineStatus{"running", "error", "stopped", "unknown"}

// FuzzDecodeInstance feeds arbitrary CreateInstance/GetInstance output to
// decodeInstance. Invariants: it never panics; what it accepts satisfies the
// protocol (provider_id and name set, a known status); what it refuses is
// explained in a bounded message that starts with the problem; and the same
// answer inside a ListInstances array decodes to the same instance.
func FuzzDecodeInstance(f *testing.F) {
	for _, s := range providerOutputSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, stdout []byte) {
		in, err := decodeInstance(stdout)
		if err != nil {
			checkInvalidOutput(t, stdout, err)
			return
		}
		checkProtocolInstance(t, in)
		list, err := decodeInstances([]byte("[" + string(stdout) + "]"))
		if err != nil {
			t.Fatalf("accepted alone, refused in a list: %v", err)
		}
		if len(list) != 1 || !reflect.DeepEqual(list[0], in) {
			t.Fatalf("in a list the instance reads %+v, alone %+v", list, in)
		}
	})
}

// FuzzDecodeInstances feeds arbitrary ListInstances output to
// decodeInstances: it never panics, every instance it returns satisfies the
// protocol, and a refusal is a bounded explanation. The reconciler deletes
// what a list does not show, so nothing may be silently dropped: an
// accepted list has one instance per array element.
func FuzzDecodeInstances(f *testing.F) {
	for _, s := range providerOutputSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, stdout []byte) {
		list, err := decodeInstances(stdout)
		if err != nil {
			if list != nil {
				t.Fatalf("a refused list still returns %d instances", len(list))
			}
			checkInvalidOutput(t, stdout, err)
			return
		}
		var elements []json.RawMessage
		if err := json.Unmarshal(stdout, &elements); err != nil {
			t.Fatalf("accepted output that is not a JSON array: %v", err)
		}
		if len(list) != len(elements) {
			t.Fatalf("%d array elements became %d instances", len(elements), len(list))
		}
		for _, in := range list {
			checkProtocolInstance(t, in)
		}
	})
}

func checkProtocolInstance(t *testing.T, in providers.Instance) {
	t.Helper()
	if in.ProviderID == "" || in.Name == "" || !slices.Contains(protocolStatuses, in.Status) {
		t.Fatalf("accepted an instance the protocol forbids: %+v", in)
	}
}

// maxInvalidOutputMessage bounds a refusal: it becomes a fault stored on
// the instance record, so a provider printing megabytes must not put them
// there. 512 bytes of quoted output plus the problem's own words.
const maxInvalidOutputMessage = 2048

func checkInvalidOutput(t *testing.T, stdout []byte, err error) {
	t.Helper()
	msg := err.Error()
	if !strings.HasPrefix(msg, "invalid output: ") {
		t.Fatalf("refusal does not say the output is invalid: %q", msg)
	}
	if len(msg) > maxInvalidOutputMessage {
		t.Fatalf("refusal is %d bytes, over %d", len(msg), maxInvalidOutputMessage)
	}
	if utf8.Valid(stdout) && !utf8.ValidString(msg) {
		t.Fatalf("refusal of UTF-8 output cuts a character: %q", msg)
	}
}

// FuzzOutputLimits writes arbitrary output, in arbitrary chunks, to the
// buffers that cap what a provider may print, and cuts it as faults are
// cut. The head buffer keeps exactly the first limit bytes and says when it
// dropped any; the tail buffer returns exactly the last limit bytes; a cut
// string is never longer than asked (plus its "…") and never splits a
// character of valid UTF-8.
func FuzzOutputLimits(f *testing.F) {
	for _, s := range providerOutputSeeds {
		f.Add([]byte(s), uint16(16), uint8(3))
	}
	f.Add([]byte("héllo wörld ✓ 🚀"), uint16(5), uint8(1))
	f.Add(bytes.Repeat([]byte("x"), 300), uint16(0), uint8(0))
	f.Add([]byte("\x80\x80\x80abc"), uint16(1), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, limit uint16, chunk uint8) {
		n := int(limit)
		head := &headBuffer{limit: n}
		tail := &tailBuffer{limit: n}
		step := int(chunk) + 1
		for rest := data; len(rest) > 0; {
			part := rest[:min(step, len(rest))]
			rest = rest[len(part):]
			for _, w := range []interface{ Write([]byte) (int, error) }{head, tail} {
				if written, err := w.Write(part); written != len(part) || err != nil {
					t.Fatalf("Write = %d, %v; a capped buffer must swallow everything", written, err)
				}
			}
		}
		if want := data[:min(n, len(data))]; !bytes.Equal(head.buf.Bytes(), want) || head.truncated != (len(data) > n) {
			t.Fatalf("head keeps %q (truncated %t), want %q (truncated %t)", head.buf.Bytes(), head.truncated, want, len(data) > n)
		}
		if want := data[max(0, len(data)-n):]; !bytes.Equal(tail.Bytes(), want) {
			t.Fatalf("tail keeps %q, want %q", tail.Bytes(), want)
		}
		if tail.truncated && len(data) <= n {
			t.Fatal("tail says it dropped output it kept")
		}
		if len(tail.buf) > 2*n+step {
			t.Fatalf("tail holds %d bytes for a limit of %d", len(tail.buf), n)
		}

		s := string(data)
		checkCut(t, "firstBytes", s, firstBytes(s, n), n, strings.TrimSuffix, strings.HasPrefix)
		checkCut(t, "lastBytes", s, lastBytes(s, n), n, strings.TrimPrefix, strings.HasSuffix)
		if fault := faultText(data, data); len(fault) > 2*(maxFaultBytes+len("…"))+1 {
			t.Fatalf("fault is %d bytes", len(fault))
		}
	})
}

// checkCut checks a cut of s to n bytes: unmark removes the "…" marker
// and within says where the kept part must sit in s.
func checkCut(t *testing.T, name, s, cut string, n int,
	unmark func(string, string) string, within func(string, string) bool) {
	t.Helper()
	if len(s) <= n {
		if cut != s {
			t.Fatalf("%s cut %q, which fits in %d bytes", name, s, n)
		}
		return
	}
	kept := unmark(cut, "…")
	if kept == cut || len(kept) > n || !within(s, kept) {
		t.Fatalf("%s(%q, %d) = %q", name, s, n, cut)
	}
	if utf8.ValidString(s) && (!utf8.ValidString(kept) || len(kept) < n-(utf8.UTFMax-1)) {
		t.Fatalf("%s(%q, %d) = %q splits a character or drops too much", name, s, n, cut)
	}
}
