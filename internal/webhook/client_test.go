package webhook

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"
	"testing"
)

var guid = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestSendDeliversLikeGitHub(t *testing.T) {
	var (
		mu   sync.Mutex
		got  http.Header
		body []byte
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got, body = r.Header.Clone(), b
		mu.Unlock()
		w.WriteHeader(http.StatusTeapot)
		_, _ = w.Write([]byte("not a reply"))
	}))
	defer srv.Close()

	payload := []byte(`{"zen":"hi"}`)
	res, err := Send(context.Background(), srv.URL, testSecret, EventPing, payload, "")
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !guid.MatchString(res.DeliveryID) || got.Get(DeliveryHeader) != res.DeliveryID {
		t.Errorf("delivery id = %q (sent %q), want a generated GUID", res.DeliveryID, got.Get(DeliveryHeader))
	}
	if err := VerifySignature(testSecret, body, got.Get(SignatureHeader)); err != nil || string(body) != string(payload) {
		t.Errorf("sent body %q with a signature that does not verify: %v", body, err)
	}
	for h, want := range map[string]string{EventHeader: EventPing, "User-Agent": UserAgent, "Content-Type": "application/json"} {
		if got.Get(h) != want {
			t.Errorf("%s = %q, want %q", h, got.Get(h), want)
		}
	}
	if res.StatusCode != http.StatusTeapot || string(res.Body) != "not a reply" || res.Reply != nil {
		t.Errorf("result = %+v, want the server's answer with no decoded Reply", res)
	}
}

func TestSendThroughIntakeKeepsDeliveryID(t *testing.T) {
	f := newFixture(t, nil)
	srv := httptest.NewServer(f.intake)
	defer srv.Close()
	body := examplePayload(t, "queued.json")

	// A redelivery under the same id is processed again.
	for _, want := range []string{StatusProcessed, StatusProcessed} {
		res, err := Send(context.Background(), srv.URL, testSecret, EventWorkflowJob, body, "fixed-id")
		if err != nil {
			t.Fatal(err)
		}
		if res.DeliveryID != "fixed-id" || res.Reply == nil || res.Reply.Status != want || res.Reply.DeliveryID != "fixed-id" {
			t.Fatalf("result = %+v (reply %+v), want %s", res, res.Reply, want)
		}
	}

	res, err := Send(context.Background(), srv.URL, []byte("wrong"), EventWorkflowJob, body, "")
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusUnauthorized || res.Reply == nil || res.Reply.Status != StatusRejected {
		t.Fatalf("wrong secret: result = %+v", res)
	}
}

func TestSendReportsUnreachableServer(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	if _, err := Send(context.Background(), url, testSecret, EventPing, []byte(`{}`), ""); err == nil {
		t.Fatal("Send to a closed server succeeded")
	}
}

func TestNewDeliveryIDIsRandomGUID(t *testing.T) {
	a, err := NewDeliveryID()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewDeliveryID()
	if !guid.MatchString(a) || a == b {
		t.Fatalf("ids %q and %q: want two different version-4 GUIDs", a, b)
	}
}
