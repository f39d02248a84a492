package engine

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"reflect"
	"testing"

	"github.com/runfleet/runfleet/internal/runner"
)

// A webhook's event is named on the wire and in log lines as before the
// intake port spoke of events (delivery_id, no source), so messages in
// flight across an upgrade and operators' searches keep working; another
// intake's is named by its source and key.
func TestEventMetaOnTheWireAndInLogs(t *testing.T) {
	inst := &runner.Instance{Name: "runfleet-p-1-1", JobID: 1}
	for _, tc := range []struct {
		name    string
		meta    EventMeta
		wire    string
		logKeys map[string]string
	}{
		{"webhook", Webhook("d-1"),
			`{"v":1,"kind":"create","instance":"runfleet-p-1-1","delivery_id":"d-1","job_id":1}`,
			map[string]string{"delivery_id": "d-1"}},
		{"no event", EventMeta{},
			`{"v":1,"kind":"create","instance":"runfleet-p-1-1","job_id":1}`,
			map[string]string{"delivery_id": ""}},
		{"a delivery recovered from GitHub's log", EventMeta{Source: SourceDeliveryLog, Key: "d-2"},
			`{"v":1,"kind":"create","instance":"runfleet-p-1-1","source":"delivery_log","delivery_id":"d-2","job_id":1}`,
			map[string]string{"source": "delivery_log", "delivery_id": "d-2"}},
		{"another intake", EventMeta{Source: "scale_set", Key: "m-3"},
			`{"v":1,"kind":"create","instance":"runfleet-p-1-1","source":"scale_set","delivery_id":"m-3","job_id":1}`,
			map[string]string{"source": "scale_set", "event_key": "m-3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, err := EncodeMessage(createMessage(inst, tc.meta))
			if err != nil {
				t.Fatal(err)
			}
			if string(body) != tc.wire {
				t.Errorf("message = %s, want %s", body, tc.wire)
			}
			msg, err := DecodeMessage(body)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			withEvent(slog.New(slog.NewJSONHandler(&buf, nil)), msg.event()).Info("x")
			var line map[string]any
			if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, k := range []string{"delivery_id", "source", "event_key"} {
				if v, ok := line[k]; ok {
					got[k] = v.(string)
				}
			}
			if !reflect.DeepEqual(got, tc.logKeys) {
				t.Errorf("log line names the event by %v, want %v", got, tc.logKeys)
			}
		})
	}
}
