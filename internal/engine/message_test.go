package events

import (
	"errors"
	"strings"
	"testing"
)

func TestEncodeDecodeRoundTrip(t *testing.T) {
	in := Message{Kind: KindDelete, Instance: "runfleet-p-1-1", DeliveryID: "d", JobID: 1, Attempt: 3}
	body, err := Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Decode(body)
	if err != nil {
		t.Fatal(err)
	}
	in.Version = MessageVersion
	if out.Kind != in.Kind || out.Instance != in.Instance || out.Attempt != in.Attempt || out.Version != MessageVersion {
		t.Fatalf("round trip: %+v != %+v", out, in)
	}
}

func TestDecodeRejectsWhatCanNeverBeProcessed(t *testing.T) {
	for name, body := range map[string]string{
		"not json":          `{`,
		"newer version":     `{"v":2,"kind":"create","instance":"x"}`,
		"no version":        `{"kind":"create","instance":"x"}`,
		"unknown kind":      `{"v":1,"kind":"explode","instance":"x"}`,
		"no instance":       `{"v":1,"kind":"create"}`,
		"scale_up sans job": `{"v":1,"kind":"scale_up","instance":"x"}`,
		"negative attempt":  `{"v":1,"kind":"delete","instance":"x","attempt":-1}`,
	} {
		if _, err := Decode([]byte(body)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
}

func TestEncodeRefusesInvalidMessages(t *testing.T) {
	if _, err := Encode(Message{Kind: KindCreate}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("err = %v", err)
	}
}

func TestParseWorkflowJobNamesTheMissingField(t *testing.T) {
	for body, want := range map[string]string{
		`{`: "not valid JSON",
		`{"workflow_job":{"id":1},"repository":{"full_name":"o/r"}}`: "no action",
		`{"action":"queued","repository":{"full_name":"o/r"}}`:       "workflow_job.id",
		`{"action":"queued","workflow_job":{"id":1}}`:                "repository.full_name",
	} {
		_, err := ParseWorkflowJob([]byte(body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want it to mention %q", body, err, want)
		}
	}
	ev, err := ParseWorkflowJob([]byte(`{"action":"queued","workflow_job":{"id":1},"repository":{"full_name":"o/r"}}`))
	if err != nil || ev.WorkflowJob.RunAttempt != 1 {
		t.Fatalf("run attempt defaults to 1: %+v, %v", ev, err)
	}
}
