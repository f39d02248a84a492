package scaleset

import (
	"testing"
	"time"
)

// Job messages decode into typed values in order; unknown types and
// unreadable entries are kept, never dropped, never a panic.
func TestDecodeMessages(t *testing.T) {
	cases := []struct {
		name      string
		wire      string
		types     []string
		malformed bool
	}{
		{"every known type",
			`[{"messageType":"JobAvailable","runnerRequestId":1,"acquireJobUrl":"u"},
			  {"messageType":"JobAssigned","runnerRequestId":1},
			  {"messageType":"JobStarted","runnerRequestId":1,"runnerId":5,"runnerName":"r"},
			  {"messageType":"JobCompleted","runnerRequestId":1,"result":"succeeded","runnerId":5,"runnerName":"r"}]`,
			[]string{"*scaleset.JobAvailable", "*scaleset.JobAssigned", "*scaleset.JobStarted", "*scaleset.JobCompleted"}, false},
		{"unknown type kept",
			`[{"messageType":"JobWaitingForApproval","runnerRequestId":2},{"messageType":"JobAssigned","runnerRequestId":3}]`,
			[]string{"*scaleset.UnknownEvent", "*scaleset.JobAssigned"}, false},
		{"unreadable field kept as unknown",
			`[{"messageType":"JobStarted","runnerId":"not a number"}]`,
			[]string{"*scaleset.UnknownEvent"}, false},
		{"not an object", `[42]`, []string{"*scaleset.UnknownEvent"}, false},
		{"empty body", ``, nil, false},
		{"empty array", `[]`, nil, false},
		{"not an array", `{"messageType":"JobAssigned"}`, nil, true},
		{"not JSON", `<html>`, nil, true},
		{".NET times", `[{"messageType":"JobAssigned","queueTime":"2026-11-28T06:00:00.1234567Z","runnerAssignTime":"0001-01-01T00:00:00","finishTime":null}]`,
			[]string{"*scaleset.JobAssigned"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := wireMessage{MessageID: 9, MessageType: JobMessagesType, Body: c.wire, Statistics: &Statistics{TotalAssignedJobs: 4}}
			m := w.message()
			if m.ID != 9 || m.Statistics.TotalAssignedJobs != 4 {
				t.Errorf("id %d, statistics %+v", m.ID, m.Statistics)
			}
			if (m.Malformed != nil) != c.malformed {
				t.Errorf("Malformed = %v, want malformed=%v", m.Malformed, c.malformed)
			}
			if len(m.Events) != len(c.types) {
				t.Fatalf("%d events, want %d", len(m.Events), len(c.types))
			}
			for i, ev := range m.Events {
				if got := typeName(ev); got != c.types[i] {
					t.Errorf("event %d: %s, want %s", i, got, c.types[i])
				}
			}
		})
	}
}

func TestDecodedFields(t *testing.T) {
	w := wireMessage{MessageType: JobMessagesType, Body: `[
		{"messageType":"JobCompleted","runnerRequestId":7,"jobId":"a-guid","workflowRunId":99,"result":"canceled",
		 "runnerId":0,"runnerName":"","requestLabels":["linux"],"queueTime":"2026-11-28T06:00:00Z","runnerAssignTime":"0001-01-01T00:00:00"}]`}
	m := w.message()
	c, ok := m.Events[0].(*JobCompleted)
	if !ok {
		t.Fatalf("%T", m.Events[0])
	}
	if c.RunnerRequestID != 7 || c.JobID != "a-guid" || c.WorkflowRunID != 99 || c.Result != ResultCanceled || c.RequestLabels[0] != "linux" {
		t.Errorf("%+v", c)
	}
	if !c.QueueTime.Equal(time.Date(2026, 11, 28, 6, 0, 0, 0, time.UTC)) || !c.RunnerAssignTime.IsZero() {
		t.Errorf("times %v %v", c.QueueTime, c.RunnerAssignTime)
	}
	if c.Job().RunnerRequestID != 7 {
		t.Error("Job() does not carry the ref")
	}
}

// A message whose outer type is not job messages is reported, not read.
func TestUnknownOuterMessageType(t *testing.T) {
	m := (&wireMessage{MessageID: 3, MessageType: "SomethingNew", Body: `[]`}).message()
	if m.Malformed == nil || m.Type != "SomethingNew" || len(m.Events) != 0 {
		t.Errorf("%+v", m)
	}
}

func typeName(v any) string {
	switch v.(type) {
	case *JobAvailable:
		return "*scaleset.JobAvailable"
	case *JobAssigned:
		return "*scaleset.JobAssigned"
	case *JobStarted:
		return "*scaleset.JobStarted"
	case *JobCompleted:
		return "*scaleset.JobCompleted"
	case *UnknownEvent:
		return "*scaleset.UnknownEvent"
	}
	return "?"
}
