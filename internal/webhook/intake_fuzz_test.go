package webhook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/webhook"
)

var fuzzHookSecret = []byte("fuzz-webhook-secret")

// fuzzBodyLimit is small enough that the fuzzer reaches it, and large
// enough for every real payload in the seeds.
const fuzzBodyLimit = 16 << 10

// How the fuzzed request is signed.
const (
	signRight    = iota // what GitHub sends
	signOtherKey        // a valid signature under another secret
	signAsFuzzed        // the fuzzed header value, verbatim
	signNone            // no signature header
	signModes
)

// fuzzEngine stands in for the engine's intake only to record whether the
// webhook intake reached it and with what; the engine is tested on its own.
type fuzzEngine struct {
	mu    sync.Mutex
	calls []fuzzEngineCall
}

type fuzzEngineCall struct {
	event engine.EventMeta
	ev    runner.JobEvent
}

func (e *fuzzEngine) HandleJobEvent(_ context.Context, ev runner.JobEvent, meta engine.EventMeta) (engine.Outcome, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls = append(e.calls, fuzzEngineCall{event: meta, ev: ev})
	return engine.Outcome{Action: string(ev.Action), Result: engine.ResultCreated, Instance: "runfleet-linux-x64-1-1", Pool: "linux-x64"}, nil
}

func (e *fuzzEngine) taken() []fuzzEngineCall {
	e.mu.Lock()
	defer e.mu.Unlock()
	calls := e.calls
	e.calls = nil
	return calls
}

// FuzzIntakeHandle sends arbitrary deliveries, signed right, wrongly or
// not at all, through Intake.Handle and, over net/http, ServeHTTP.
// Invariants: a non-2xx answer never reaches the engine; the engine is
// reached at most once, only for a body within the limit that carries a
// valid signature, a workflow_job event, a delivery id and a payload that
// parses, and then always, with that delivery id and payload; a body over
// the limit is a 413 and one without a valid signature a 401; every answer
// is a JSON Reply whose status agrees with its code; and both transports
// give the same answer.
func FuzzIntakeHandle(f *testing.F) {
	seedFuzzIntake(f)
	rec := &fuzzEngine{}
	intake, err := webhook.New(webhook.Options{
		Secret:       fuzzHookSecret,
		MaxBodyBytes: fuzzBodyLimit,
		Handler:      rec,
		Logger:       slog.New(slog.DiscardHandler),
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte, event, deliveryID, contentType, signature string, signMode uint8) {
		headers := http.Header{}
		headers.Set(webhook.EventHeader, event)
		headers.Set(webhook.DeliveryHeader, deliveryID)
		headers.Set("Content-Type", contentType)
		switch signMode % signModes {
		case signRight:
			headers.Set(webhook.SignatureHeader, webhook.Sign(fuzzHookSecret, body))
		case signOtherKey:
			headers.Set(webhook.SignatureHeader, webhook.Sign([]byte("not-the-secret"), body))
		case signAsFuzzed:
			headers.Set(webhook.SignatureHeader, signature)
		}
		signed := webhook.VerifySignature(fuzzHookSecret, body, headers.Get(webhook.SignatureHeader)) == nil

		resp := intake.Handle(context.Background(), webhook.Request{Headers: headers.Clone(), Body: body})
		calls := rec.taken()
		checkIntakeAnswer(t, resp, calls, fuzzDelivery{
			body: body, headers: headers, signed: signed,
		})

		req := httptest.NewRequest(http.MethodPost, "/webhook", bytes.NewReader(body))
		req.Header = headers.Clone()
		w := httptest.NewRecorder()
		intake.ServeHTTP(w, req)
		overHTTP := rec.taken()
		if w.Code != resp.StatusCode || len(overHTTP) != len(calls) {
			t.Fatalf("ServeHTTP answered %d with %d engine calls; Handle %d with %d", w.Code, len(overHTTP), resp.StatusCode, len(calls))
		}
	})
}

// fuzzDelivery is what was sent, for checking the answer.
type fuzzDelivery struct {
	body    []byte
	headers http.Header
	signed  bool
}

func checkIntakeAnswer(t *testing.T, resp webhook.Response, calls []fuzzEngineCall, d fuzzDelivery) {
	t.Helper()
	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	var reply webhook.Reply
	if err := json.Unmarshal(resp.Body, &reply); err != nil {
		t.Fatalf("answer %d is not a JSON Reply: %v: %q", resp.StatusCode, err, resp.Body)
	}
	if reply.Message == "" {
		t.Fatalf("answer %d says nothing: %s", resp.StatusCode, resp.Body)
	}
	if !ok && len(calls) > 0 {
		t.Fatalf("answer %d, yet the engine was called: %+v", resp.StatusCode, calls)
	}
	if ok != (reply.Status == webhook.StatusProcessed || reply.Status == webhook.StatusPong || reply.Status == webhook.StatusIgnored) {
		t.Fatalf("answer %d with reply status %q", resp.StatusCode, reply.Status)
	}
	switch {
	case len(d.body) > fuzzBodyLimit:
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("a %d-byte body, over the %d limit, answered %d", len(d.body), fuzzBodyLimit, resp.StatusCode)
		}
	case !d.signed:
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("a delivery without a valid signature answered %d", resp.StatusCode)
		}
	}

	ev, parsed := acceptablePayload(d)
	if !parsed {
		if len(calls) > 0 {
			t.Fatalf("the engine got a delivery that must be refused: %+v", calls)
		}
		return
	}
	if len(calls) != 1 {
		t.Fatalf("a valid signed workflow_job reached the engine %d times (answer %d: %s)", len(calls), resp.StatusCode, resp.Body)
	}
	if resp.StatusCode != http.StatusOK || reply.Status != webhook.StatusProcessed {
		t.Fatalf("a processed delivery answered %d %q", resp.StatusCode, reply.Status)
	}
	call := calls[0]
	if want := engine.Webhook(d.headers.Get(webhook.DeliveryHeader)); call.event != want {
		t.Fatalf("engine got event %+v, header says %+v", call.event, want)
	}
	want := ev.JobEvent()
	if call.ev.JobID != want.JobID || call.ev.Action != want.Action || call.ev.Repository != want.Repository ||
		call.ev.RunAttempt != want.RunAttempt || call.ev.JobID <= 0 || call.ev.RunAttempt < 1 || call.ev.Repository == "" {
		t.Fatalf("engine got %+v from a payload that says %+v", call.ev, want)
	}
}

// acceptablePayload is the oracle: whether the delivery must reach the
// engine, and the payload it carries. A JSON body, or GitHub's form encoding
// with the JSON in its "payload" field, is a payload; a missing
// Content-Type is read as JSON.
func acceptablePayload(d fuzzDelivery) (*webhook.WorkflowJobEvent, bool) {
	if len(d.body) > fuzzBodyLimit || !d.signed ||
		d.headers.Get(webhook.EventHeader) != webhook.EventWorkflowJob || d.headers.Get(webhook.DeliveryHeader) == "" {
		return nil, false
	}
	payload := d.body
	if contentType := d.headers.Get("Content-Type"); strings.TrimSpace(contentType) != "" {
		media, _, err := mime.ParseMediaType(contentType)
		switch {
		case err != nil:
			return nil, false
		case media == "application/json":
		case media == "application/x-www-form-urlencoded":
			form, err := url.ParseQuery(string(d.body))
			if err != nil || !form.Has("payload") {
				return nil, false
			}
			payload = []byte(form.Get("payload"))
		default:
			return nil, false
		}
	}
	ev, err := webhook.ParseWorkflowJob(payload)
	if err != nil {
		return nil, false
	}
	return ev, true
}

// seedFuzzIntake seeds the corpus with the real payloads in the repository,
// each signed right and as a few refusals.
func seedFuzzIntake(f *testing.F) {
	f.Helper()
	var paths []string
	for _, pattern := range []string{
		"../../examples/payloads/*.json",
		"testdata/octokit-webhooks-examples/*.json",
	} {
		found, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		paths = append(paths, found...)
	}
	if len(paths) == 0 {
		f.Fatal("no real payloads found")
	}
	const delivery = "72d3162e-cc78-11e3-81ab-4c9367dc0958"
	for _, path := range paths {
		body, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(body, webhook.EventWorkflowJob, delivery, "application/json", "", uint8(signRight))
		f.Add(body, webhook.EventWorkflowJob, delivery, "", "", uint8(signOtherKey))
		f.Add(body, webhook.EventWorkflowJob, "", "application/json; charset=utf-8", "", uint8(signRight))
		f.Add(body, webhook.EventWorkflowJob, delivery, "application/json", webhook.Sign(fuzzHookSecret, body), uint8(signAsFuzzed))
		f.Add(body, "push", delivery, "application/json", "", uint8(signRight))
		f.Add(body, webhook.EventWorkflowJob, delivery, "text/plain", "", uint8(signNone))
		form := []byte("payload=" + url.QueryEscape(string(body)))
		f.Add(form, webhook.EventWorkflowJob, delivery, "application/x-www-form-urlencoded", "", uint8(signRight))
	}
	ping, err := os.ReadFile("testdata/ping.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(ping, webhook.EventPing, delivery, "application/json", "", uint8(signRight))
	minimal := []byte(`{"action":"queued","workflow_job":{"id":42,"labels":["self-hosted"]},"repository":{"full_name":"o/r"}}`)
	f.Add(minimal, webhook.EventWorkflowJob, "d-1", "", "", uint8(signRight))
	f.Add(minimal, webhook.EventWorkflowJob, "d-1", "", "sha256=", uint8(signAsFuzzed))
	f.Add(minimal, webhook.EventWorkflowJob, "d-1", "", "sha1=abc", uint8(signAsFuzzed))
	f.Add(bytes.Repeat([]byte(" "), fuzzBodyLimit+1), webhook.EventWorkflowJob, "d-1", "", "", uint8(signRight))
	f.Add([]byte(`{"action":"queued","workflow_job":{"id":0},"repository":{"full_name":"o/r"}}`), webhook.EventWorkflowJob, "d-1", "", "", uint8(signRight))
}
