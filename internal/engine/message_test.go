package engine

import (
	"errors"

	"testing"
)

func TestEncodeDecodeRoundTrip(t *testing.T) {
	in := Message{Kind: KindDelete, Instance: "runfleet-p-1-1", EventKey: "d", JobID: 1, Attempt: 3}
	body, err := EncodeMessage(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := DecodeMessage(body)
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
		if _, err := DecodeMessage([]byte(body)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
}

func TestEncodeRefusesInvalidMessages(t *testing.T) {
	if _, err := EncodeMessage(Message{Kind: KindCreate}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("err = %v", err)
	}
}
