package httpapi_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/runfleet/runfleet/internal/httpapi"
)

func TestClientErrorsSayEachThingOnce(t *testing.T) {
	c, err := httpapi.NewClient("http://127.0.0.1:1", testToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ListOpenJobs(context.Background(), "")
	if err == nil || strings.Count(err.Error(), "127.0.0.1:1") != 1 || strings.Contains(err.Error(), "/api/v1/") {
		t.Errorf("unreachable: %q, want the address once and no request line", err)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("unreachable: %v does not match ECONNREFUSED", err)
	}

	f := newFixture(t, testToken)
	_, err = f.client.GetInstance(context.Background(), "runfleet-gone-1-1")
	var apiErr *httpapi.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound ||
		err.Error() != `instance "runfleet-gone-1-1" not found (server answered 404 Not Found)` {
		t.Errorf("unknown instance: %v", err)
	}
}
