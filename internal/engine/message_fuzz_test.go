package engine_test

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/runfleet/runfleet/internal/engine"
)

// FuzzDecodeMessage feeds arbitrary queue bodies to DecodeMessage. A worker
// deletes a body that fails with ErrMalformed and retries one that fails
// otherwise, so every refusal must be ErrMalformed (or the body is retried
// until it dead-letters); and an accepted message must survive the
// re-encoding a re-send (delete backoff, serve_job) puts it through.
func FuzzDecodeMessage(f *testing.F) {
	for _, seed := range []string{
		`{"v":1,"kind":"create","instance":"runfleet-linux-x64-7000000001-1","delivery_id":"d-1","job_id":7000000001}`,
		`{"v":1,"kind":"delete","instance":"runfleet-linux-x64-7000000001-1","attempt":3}`,
		`{"v":1,"kind":"serve_job","job_key":"7000000001#1","job_id":7000000001}`,
		`{"v":1,"kind":"scale_up","job":{"pool":"linux-x64","id":7000000001,"run_attempt":1,"owner":"octo-org",` +
			`"repository":"octo-org/hello-world","installation_id":12,"labels":["self-hosted","linux","x64"]}}`,
		`{"v":1,"kind":"scale_up","job":{"pool":"linux-x64","id":1,"labels":[]}}`,
		`{"v":2,"kind":"create","instance":"x"}`,
		`{"kind":"create","instance":"x"}`,
		`{"v":1,"kind":"explode","instance":"x"}`,
		`{"v":1,"kind":"delete","instance":"x","attempt":-1}`,
		`{"v":1,"kind":"scale_up","job":null}`,
		`{"V":1,"KIND":"create","Instance":"x"}`,
		`{"v":1,"kind":"create","instance":"x","instance":""}`,
		`{"v":1.5,"kind":"create","instance":"x"}`,
		"{\"v\":1,\"kind\":\"create\",\"instance\":\"\xff\"}",
		`[]`, `null`, `{`, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := engine.DecodeMessage(body)
		if err != nil {
			if !errors.Is(err, engine.ErrMalformed) {
				t.Fatalf("refusal %v is not ErrMalformed: the body would be retried forever", err)
			}
			if !reflect.DeepEqual(m, engine.Message{}) {
				t.Fatalf("refused body still yields a message: %+v", m)
			}
			return
		}
		if m.Version < 1 || m.Version > engine.MessageVersion {
			t.Fatalf("accepted version %d", m.Version)
		}
		encoded, err := engine.EncodeMessage(m)
		if err != nil {
			t.Fatalf("an accepted message cannot be re-encoded: %v (message %+v)", err, m)
		}
		again, err := engine.DecodeMessage(encoded)
		if err != nil {
			t.Fatalf("a re-encoded message is refused: %v (body %s)", err, encoded)
		}
		// Encoding stamps the current version; everything else is kept.
		want := m
		want.Version = engine.MessageVersion
		if !sameMessage(again, want) {
			t.Fatalf("re-encoding changed the message:\n got %+v\nwant %+v", again, want)
		}
		// The encoding is a fixed point: a message re-sent any number of
		// times is the same bytes.
		twice, err := engine.EncodeMessage(again)
		if err != nil || !bytes.Equal(twice, encoded) {
			t.Fatalf("second encoding differs: %s (%v), first %s", twice, err, encoded)
		}
	})
}

// FuzzEncodeMessage builds messages from fields: whatever EncodeMessage
// accepts must decode to the same message, and whatever it refuses must be
// ErrMalformed, so a sender can never put a body on the queue that its own
// workers drop.
func FuzzEncodeMessage(f *testing.F) {
	f.Add("create", "runfleet-linux-x64-7000000001-1", "", "d-1", int64(7000000001), 0, "", int64(0), "")
	f.Add("delete", "runfleet-linux-x64-7000000001-1", "", "", int64(0), 4, "", int64(0), "")
	f.Add("serve_job", "", "7000000001#2", "d-2", int64(7000000001), 0, "", int64(0), "")
	f.Add("scale_up", "", "", "d-3", int64(0), 0, "linux-x64", int64(7000000002), "self-hosted")
	f.Add("scale_up", "", "", "", int64(0), 0, "", int64(1), "")
	f.Add("create", "", "", "", int64(-1), -1, "", int64(0), "")
	f.Fuzz(func(t *testing.T, kind, instance, jobKey, deliveryID string, jobID int64, attempt int, pool string, legacyID int64, label string) {
		m := engine.Message{
			Kind: engine.Kind(kind), Instance: instance, JobKey: jobKey,
			EventKey: deliveryID, JobID: jobID, Attempt: attempt,
		}
		if pool != "" || legacyID != 0 || label != "" {
			m.LegacyJob = &engine.LegacyJob{Pool: pool, ID: legacyID, RunAttempt: 1, Owner: "octo-org", Labels: []string{label}}
		}
		body, err := engine.EncodeMessage(m)
		if err != nil {
			if !errors.Is(err, engine.ErrMalformed) {
				t.Fatalf("refusal %v is not ErrMalformed", err)
			}
			return
		}
		got, err := engine.DecodeMessage(body)
		if err != nil {
			t.Fatalf("an encoded message is refused by its reader: %v (body %s)", err, body)
		}
		want := m
		want.Version = engine.MessageVersion
		if !validUTF8Message(m) {
			// JSON carries text: invalid UTF-8 comes back as U+FFFD. The
			// engine only ever sends names it made, which are ASCII.
			return
		}
		if !sameMessage(got, want) {
			t.Fatalf("decoded message differs:\n got %+v\nwant %+v", got, want)
		}
	})
}

// sameMessage compares messages as JSON sees them: an empty label list and
// no label list are the same message.
func sameMessage(a, b engine.Message) bool {
	ja, jb := a.LegacyJob, b.LegacyJob
	a.LegacyJob, b.LegacyJob = nil, nil
	if !reflect.DeepEqual(a, b) || (ja == nil) != (jb == nil) {
		return false
	}
	if ja == nil {
		return true
	}
	la, lb := *ja, *jb
	if len(la.Labels) == 0 && len(lb.Labels) == 0 {
		la.Labels, lb.Labels = nil, nil
	}
	return reflect.DeepEqual(la, lb)
}

func validUTF8Message(m engine.Message) bool {
	texts := []string{string(m.Kind), m.Instance, m.JobKey, string(m.Source), m.EventKey}
	if j := m.LegacyJob; j != nil {
		texts = append(texts, j.Pool, j.Owner, j.Repository)
		texts = append(texts, j.Labels...)
	}
	for _, s := range texts {
		if !utf8.ValidString(s) {
			return false
		}
	}
	return true
}
