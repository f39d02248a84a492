package webhook

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/testlog"
)

var testSecret = []byte("test-webhook-secret")

// recordingHandler stands in for the engine only to record what intake hands
// it; the engine's own behaviour is tested in the engine package.
type recordingHandler struct {
	mu    sync.Mutex
	calls []handlerCall
	// respond decides each call's answer; nil means a created instance.
	respond func(call int) (engine.Outcome, error)
}

type handlerCall struct {
	// ctxErr and deadline are read during the call: the context itself is
	// cancelled once Handle returns.
	ctxErr      error
	deadline    time.Time
	hasDeadline bool
	event       engine.EventMeta
	ev          runner.JobEvent
}

func (h *recordingHandler) HandleJobEvent(ctx context.Context, ev runner.JobEvent, meta engine.EventMeta) (engine.Outcome, error) {
	h.mu.Lock()
	deadline, hasDeadline := ctx.Deadline()
	h.calls = append(h.calls, handlerCall{ctxErr: ctx.Err(), deadline: deadline, hasDeadline: hasDeadline, event: meta, ev: ev})
	n := len(h.calls)
	respond := h.respond
	h.mu.Unlock()
	if respond != nil {
		return respond(n)
	}
	return engine.Outcome{Action: string(ev.Action), Result: engine.ResultCreated, Instance: "runfleet-linux-x64-1-1", Pool: "linux-x64"}, nil
}

func (h *recordingHandler) Calls() []handlerCall {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]handlerCall(nil), h.calls...)
}

type fixture struct {
	intake  *Intake
	handler *recordingHandler
	logs    *testlog.Buffer
}

func newFixture(t *testing.T, mutate func(*Options)) *fixture {
	t.Helper()
	f := &fixture{handler: &recordingHandler{}, logs: &testlog.Buffer{}}
	opts := Options{
		Secret:  testSecret,
		Handler: f.handler,
		Logger:  f.logs.Logger(slog.LevelDebug),
	}
	if mutate != nil {
		mutate(&opts)
	}
	in, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	f.intake = in
	return f
}

// signedRequest builds a request as GitHub sends it.
func signedRequest(event, deliveryID string, body []byte) Request {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "GitHub-Hookshot/044aadd")
	h.Set(EventHeader, event)
	h.Set(DeliveryHeader, deliveryID)
	h.Set(SignatureHeader, Sign(testSecret, body))
	return Request{Headers: h, Body: body}
}

func decodeReply(t *testing.T, body []byte) Reply {
	t.Helper()
	var r Reply
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("response body is not a JSON Reply: %v: %s", err, body)
	}
	return r
}

func examplePayload(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", "payloads", name))
	if err != nil {
		t.Fatalf("reading example payload: %v", err)
	}
	return b
}
