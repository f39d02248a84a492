package webhook

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/runner"
)

func TestNewRefusesIncompleteOptions(t *testing.T) {
	h := &recordingHandler{}
	cases := map[string]Options{
		"no secret":         {Handler: h},
		"no handler":        {Secret: testSecret},
		"negative body max": {Secret: testSecret, Handler: h, MaxBodyBytes: -1},
	}
	for name, opts := range cases {
		if _, err := New(opts); err == nil {
			t.Errorf("%s: New succeeded, want an error", name)
		}
	}
}

func TestHandleRejectsBadInputWithoutChangingState(t *testing.T) {
	queued := []byte(`{"action":"queued","workflow_job":{"id":42,"labels":["self-hosted"]},"repository":{"full_name":"o/r"}}`)
	const limit = 4096

	cases := []struct {
		name       string
		req        func() Request
		wantStatus int
		wantReason string
	}{
		{"body over the limit", func() Request {
			return signedRequest(EventWorkflowJob, "d-1", bytes.Repeat([]byte(" "), limit+1))
		}, http.StatusRequestEntityTooLarge, "4096-byte limit"},
		{"signature missing", func() Request {
			r := signedRequest(EventWorkflowJob, "d-1", queued)
			r.Headers.Del(SignatureHeader)
			return r
		}, http.StatusUnauthorized, "header is missing"},
		{"signature malformed", func() Request {
			r := signedRequest(EventWorkflowJob, "d-1", queued)
			r.Headers.Set(SignatureHeader, "sha1=abc")
			return r
		}, http.StatusUnauthorized, "sha256=<64 hex digits>"},
		{"signed with another secret", func() Request {
			r := signedRequest(EventWorkflowJob, "d-1", queued)
			r.Headers.Set(SignatureHeader, Sign([]byte("not-the-secret"), queued))
			return r
		}, http.StatusUnauthorized, "does not match"},
		{"body changed after signing", func() Request {
			r := signedRequest(EventWorkflowJob, "d-1", queued)
			r.Body = bytes.Replace(queued, []byte(`42`), []byte(`43`), 1)
			return r
		}, http.StatusUnauthorized, "does not match"},
		{"event header missing", func() Request {
			return signedRequest("", "d-1", queued)
		}, http.StatusBadRequest, "X-GitHub-Event header is missing"},
		{"unsupported content type", func() Request {
			r := signedRequest(EventWorkflowJob, "d-1", queued)
			r.Headers.Set("Content-Type", "text/plain")
			return r
		}, http.StatusUnsupportedMediaType, `"text/plain" is not supported`},
		{"unparsable content type", func() Request {
			r := signedRequest(EventWorkflowJob, "d-1", queued)
			r.Headers.Set("Content-Type", "application/json; =")
			return r
		}, http.StatusUnsupportedMediaType, "cannot be parsed"},
		{"form body without payload field", func() Request {
			// What `curl -d @queued.json` sends: raw JSON labelled as a form.
			r := signedRequest(EventWorkflowJob, "d-1", queued)
			r.Headers.Set("Content-Type", "application/x-www-form-urlencoded")
			return r
		}, http.StatusBadRequest, `no "payload" field`},
		{"delivery id missing", func() Request {
			return signedRequest(EventWorkflowJob, "", queued)
		}, http.StatusBadRequest, "X-GitHub-Delivery header is missing"},
		{"not JSON", func() Request {
			return signedRequest(EventWorkflowJob, "d-1", []byte(`{"action":`))
		}, http.StatusBadRequest, "not valid JSON"},
		{"no workflow_job.id", func() Request {
			return signedRequest(EventWorkflowJob, "d-1", []byte(`{"action":"queued","workflow_job":{},"repository":{"full_name":"o/r"}}`))
		}, http.StatusBadRequest, "no workflow_job.id"},
		{"no repository", func() Request {
			return signedRequest(EventWorkflowJob, "d-1", []byte(`{"action":"queued","workflow_job":{"id":42}}`))
		}, http.StatusBadRequest, "no repository.full_name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, func(o *Options) { o.MaxBodyBytes = limit })
			req := tc.req()
			resp := f.intake.Handle(context.Background(), req)

			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status = %d, want %d (%s)", resp.StatusCode, tc.wantStatus, resp.Body)
			}
			reply := decodeReply(t, resp.Body)
			if reply.Status != StatusRejected || !strings.Contains(reply.Message, tc.wantReason) {
				t.Fatalf("reply = %+v, want status %q and a message containing %q", reply, StatusRejected, tc.wantReason)
			}
			if reply.DeliveryID != req.Headers.Get(DeliveryHeader) {
				t.Errorf("reply delivery_id = %q, want %q", reply.DeliveryID, req.Headers.Get(DeliveryHeader))
			}
			if n := len(f.handler.Calls()); n != 0 {
				t.Errorf("engine called %d times for rejected input", n)
			}

			recs := f.logs.Lines(t, nil)
			if len(recs) != 1 {
				t.Fatalf("want exactly one log line, got %d: %v", len(recs), recs)
			}
			rec := recs[0]
			if rec["level"] != "WARN" || rec["reason"] != reply.Message ||
				rec["status"] != float64(tc.wantStatus) ||
				rec["delivery_id"] != req.Headers.Get(DeliveryHeader) || rec["event"] != req.Headers.Get(EventHeader) {
				t.Errorf("log line = %v, want a WARN with delivery_id, event, reason and status", rec)
			}
		})
	}
}

func TestHandleAnswersPingAndIgnoresOtherEvents(t *testing.T) {
	ping, err := os.ReadFile(filepath.Join("testdata", "ping.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		event, wantStatus string
		body              []byte
	}{
		{EventPing, StatusPong, ping},
		{"push", StatusIgnored, []byte(`{"ref":"refs/heads/main"}`)},
		// An ignored event is never parsed, so even a body that is no
		// workflow_job at all must not be refused.
		{"check_run", StatusIgnored, []byte(`not json`)},
	} {
		t.Run(tc.event, func(t *testing.T) {
			f := newFixture(t, nil)
			resp := f.intake.Handle(context.Background(), signedRequest(tc.event, "d-ping", tc.body))
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status = %d, want 200 (%s)", resp.StatusCode, resp.Body)
			}
			reply := decodeReply(t, resp.Body)
			if reply.Status != tc.wantStatus || reply.Event != tc.event || reply.DeliveryID != "d-ping" {
				t.Fatalf("reply = %+v, want status %q for event %q", reply, tc.wantStatus, tc.event)
			}
			if len(f.handler.Calls()) != 0 {
				t.Fatal("a ping or ignored event changed state")
			}
			recs := f.logs.Lines(t, nil)
			if len(recs) != 1 || recs[0]["level"] != "INFO" || recs[0]["event"] != tc.event {
				t.Fatalf("want one INFO log line naming the event, got %v", recs)
			}
		})
	}
}

func TestHandleProcessesWorkflowJob(t *testing.T) {
	f := newFixture(t, nil)
	body := examplePayload(t, "queued.json")

	resp := f.intake.Handle(context.Background(), signedRequest(EventWorkflowJob, "d-queued", body))

	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status = %d, want 200 (%s)", resp.StatusCode, resp.Body)
	}
	calls := f.handler.Calls()
	if len(calls) != 1 {
		t.Fatalf("engine called %d times, want 1", len(calls))
	}
	// The engine gets the job in its own words, not GitHub's payload.
	want := runner.JobEvent{
		Action: runner.ActionQueued, JobID: 7000000001, RunID: calls[0].ev.RunID, RunAttempt: 1,
		Labels: []string{"self-hosted", "linux", "x64"}, Repository: "octo-org/hello-world", Org: "octo-org",
		InstallationID: calls[0].ev.InstallationID,
	}
	if ev := calls[0].ev; calls[0].event != engine.Webhook("d-queued") || ev.RunID == 0 || ev.InstallationID == 0 || !reflect.DeepEqual(ev, want) {
		t.Fatalf("engine got %+v, event %+v; want %+v", calls[0].event, ev, want)
	}
	reply := decodeReply(t, resp.Body)
	if reply.Status != StatusProcessed || reply.Outcome == nil || reply.Result != engine.ResultCreated ||
		reply.Instance != "runfleet-linux-x64-1-1" || reply.Pool != "linux-x64" || reply.Action != "queued" ||
		reply.JobID != 7000000001 || reply.DeliveryID != "d-queued" {
		t.Fatalf("reply = %+v (outcome %+v), want the engine's outcome", reply, reply.Outcome)
	}
}

func TestHandleAcceptsContentTypeParametersAndFormEncoding(t *testing.T) {
	payload := examplePayload(t, "in_progress.json")
	form := []byte(url.Values{"payload": {string(payload)}}.Encode())
	cases := []struct {
		name, contentType string
		body              []byte
	}{
		{"json with charset", "application/json; charset=utf-8", payload},
		{"json in capitals", "Application/JSON", payload},
		{"no content type", "", payload},
		{"github form encoding", "application/x-www-form-urlencoded", form},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil)
			req := signedRequest(EventWorkflowJob, "d-ct", tc.body)
			req.Headers.Set("Content-Type", tc.contentType)
			resp := f.intake.Handle(context.Background(), req)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status = %d (%s)", resp.StatusCode, resp.Body)
			}
			calls := f.handler.Calls()
			if len(calls) != 1 || calls[0].ev.RunnerName != "runfleet-linux-x64-7000000001-1" {
				t.Fatalf("engine calls = %d, want 1 with the decoded payload", len(calls))
			}
		})
	}
}

// Delivery ids are not recorded: a redelivery — the same X-GitHub-Delivery
// — reaches the engine again, whose job ledger makes the repeat change
// nothing. That is what recovers a delivery whose first processing was cut
// off by a crash.
func TestHandleProcessesRedeliveriesAgain(t *testing.T) {
	f := newFixture(t, nil)
	body := examplePayload(t, "queued.json")
	for i := range 3 {
		resp := f.intake.Handle(context.Background(), signedRequest(EventWorkflowJob, "d-same", body))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("delivery %d: status = %d (%s)", i, resp.StatusCode, resp.Body)
		}
		if got := decodeReply(t, resp.Body).Status; got != StatusProcessed {
			t.Fatalf("delivery %d: reply status = %q, want %q", i, got, StatusProcessed)
		}
	}
	calls := f.handler.Calls()
	if len(calls) != 3 {
		t.Fatalf("engine called %d times for one delivery sent 3 times, want 3", len(calls))
	}
	for _, c := range calls {
		if c.event != engine.Webhook("d-same") {
			t.Fatalf("engine got event %+v, want delivery d-same", c.event)
		}
	}
}

func TestHandleAsksForRedeliveryWhenProcessingFails(t *testing.T) {
	f := newFixture(t, nil)
	f.handler.respond = func(call int) (engine.Outcome, error) {
		if call == 1 {
			return engine.Outcome{}, errors.New("queue unavailable")
		}
		return engine.Outcome{Action: "queued", Result: engine.ResultCreated}, nil
	}
	body := examplePayload(t, "queued.json")

	resp := f.intake.Handle(context.Background(), signedRequest(EventWorkflowJob, "d-fail", body))
	if resp.StatusCode != http.StatusInternalServerError {
		t.Fatalf("status = %d, want 500 (%s)", resp.StatusCode, resp.Body)
	}
	reply := decodeReply(t, resp.Body)
	if reply.Status != StatusFailed || !strings.Contains(reply.Message, "queue unavailable") || !strings.Contains(reply.Message, "redeliver") {
		t.Fatalf("reply = %+v, want failed with the cause and a request to redeliver", reply)
	}
	var logged bool
	for _, rec := range f.logs.Lines(t, nil) {
		logged = logged || rec["level"] == "ERROR" && rec["delivery_id"] == "d-fail" && rec["job_id"] != nil
	}
	if !logged {
		t.Fatalf("no ERROR log line naming the delivery and job: %v", f.logs.Lines(t, nil))
	}

	// GitHub's redelivery carries the same id and is processed.
	resp = f.intake.Handle(context.Background(), signedRequest(EventWorkflowJob, "d-fail", body))
	if resp.StatusCode != http.StatusOK || decodeReply(t, resp.Body).Status != StatusProcessed {
		t.Fatalf("redelivery: status = %d (%s), want processed", resp.StatusCode, resp.Body)
	}
	if n := len(f.handler.Calls()); n != 2 {
		t.Fatalf("engine called %d times, want 2", n)
	}
}

func TestHandleKeepsProcessingWhenCallerGoesAway(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.ProcessTimeout = time.Minute })
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // GitHub hung up (its 10 s timeout) before the engine ran

	resp := f.intake.Handle(ctx, signedRequest(EventWorkflowJob, "d-gone", examplePayload(t, "queued.json")))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status = %d (%s)", resp.StatusCode, resp.Body)
	}
	calls := f.handler.Calls()
	if len(calls) != 1 {
		t.Fatalf("engine called %d times, want 1", len(calls))
	}
	if calls[0].ctxErr != nil {
		t.Fatalf("engine ran with a done context (%v): work would be abandoned at a disconnect", calls[0].ctxErr)
	}
	if !calls[0].hasDeadline || time.Until(calls[0].deadline) > time.Minute {
		t.Fatalf("engine deadline = %v (set %v), want at most ProcessTimeout away", calls[0].deadline, calls[0].hasDeadline)
	}
}

func TestHandleKeepsCallerDeadline(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.ProcessTimeout = time.Hour })
	parentDeadline := time.Now().Add(time.Minute)
	ctx, cancel := context.WithDeadline(context.Background(), parentDeadline)
	defer cancel()

	f.intake.Handle(ctx, signedRequest(EventWorkflowJob, "d-dl", examplePayload(t, "queued.json")))
	calls := f.handler.Calls()
	if len(calls) != 1 {
		t.Fatalf("engine called %d times", len(calls))
	}
	if !calls[0].deadline.Equal(parentDeadline) {
		t.Fatalf("engine deadline = %v, want the caller's %v (on Lambda, the function timeout)", calls[0].deadline, parentDeadline)
	}
}
