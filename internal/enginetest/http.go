package enginetest

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// CallJSON makes one request to runfleet's HTTP surface as an operator's
// client or a booting machine does — with token as a bearer token, if not
// empty — and returns the status, the JSON object answered and the
// headers. An answer that is not a JSON object, or not labelled
// application/json, fails the test: every answer of runfleet's is one.
func CallJSON(tb testing.TB, method, url, token string) (int, map[string]any, http.Header) {
	tb.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		tb.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	var body map[string]any
	if err := json.Unmarshal(data, &body); err != nil {
		tb.Fatalf("%s %s answered %d with a body that is not a JSON object: %s", method, url, resp.StatusCode, data)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		tb.Errorf("%s %s: Content-Type %q, want application/json (body %s)", method, url, ct, data)
	}
	return resp.StatusCode, body, resp.Header
}
