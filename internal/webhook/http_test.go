package webhook

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

func post(t *testing.T, url string, req Request) (*http.Response, Reply) {
	t.Helper()
	hr, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(req.Body))
	if err != nil {
		t.Fatal(err)
	}
	hr.Header = req.Headers
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, decodeReply(t, body)
}

func TestServeHTTPProcessesSignedDelivery(t *testing.T) {
	f := newFixture(t, nil)
	srv := httptest.NewServer(f.intake)
	defer srv.Close()

	resp, reply := post(t, srv.URL, signedRequest(EventWorkflowJob, "d-http", examplePayload(t, "queued.json")))
	if resp.StatusCode != http.StatusOK || reply.Status != StatusProcessed {
		t.Fatalf("status = %d, reply = %+v", resp.StatusCode, reply)
	}
	if ct := resp.Header.Get("Content-Type"); ct != ContentType {
		t.Errorf("Content-Type = %q, want %q", ct, ContentType)
	}
	if n := len(f.handler.Calls()); n != 1 {
		t.Fatalf("engine called %d times, want 1", n)
	}
}

func TestServeHTTPBodyLimit(t *testing.T) {
	const limit = 1024
	f := newFixture(t, func(o *Options) { o.MaxBodyBytes = limit })
	srv := httptest.NewServer(f.intake)
	defer srv.Close()

	// A body of exactly the limit is read in full and judged on its merits
	// (here: not JSON), proving the limit is not off by one.
	atLimit := bytes.Repeat([]byte("x"), limit)
	resp, reply := post(t, srv.URL, signedRequest(EventWorkflowJob, "d-at", atLimit))
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("body at the limit: status = %d (%+v), want 400 for bad JSON", resp.StatusCode, reply)
	}

	over := bytes.Repeat([]byte("x"), 64*limit)
	resp, reply = post(t, srv.URL, signedRequest(EventWorkflowJob, "d-over", over))
	if resp.StatusCode != http.StatusRequestEntityTooLarge || reply.Status != StatusRejected || reply.DeliveryID != "d-over" {
		t.Fatalf("body over the limit: status = %d, reply = %+v", resp.StatusCode, reply)
	}
	if len(f.handler.Calls()) != 0 {
		t.Fatal("an oversized body changed state")
	}
}

func TestServeHTTPOnlyAcceptsPost(t *testing.T) {
	f := newFixture(t, nil)
	srv := httptest.NewServer(f.intake)
	defer srv.Close()

	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != http.MethodPost {
		t.Fatalf("GET: status = %d, Allow = %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
	if reply := decodeReply(t, body); reply.Status != StatusRejected {
		t.Fatalf("GET: reply = %+v", reply)
	}
	recs := f.logs.Lines(t, nil)
	if len(recs) != 1 || recs[0]["level"] != "WARN" || recs[0]["status"] != float64(http.StatusMethodNotAllowed) {
		t.Fatalf("want one WARN log line, got %v", recs)
	}
}
