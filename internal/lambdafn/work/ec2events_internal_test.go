package work

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/runner"
)

// AWS's documented examples decode as they are (their time is a
// placeholder, taken as "now"); a real event's time is kept.
func TestDecodeAWSDocumentedEC2Events(t *testing.T) {
	for file, kind := range map[string]runner.Interruption{
		"ec2-spot-instance-interruption-warning.json": runner.InterruptionSpot,
		"ec2-instance-rebalance-recommendation.json":  runner.InterruptionRebalance,
	} {
		body, err := os.ReadFile("testdata/" + file)
		if err != nil {
			t.Fatal(err)
		}
		if !isEventBridgeEvent(body) {
			t.Fatalf("%s not recognised as an EventBridge event", file)
		}
		n, _, err := decodeInterruption(body)
		if err != nil || n.Kind != kind || n.ProviderID != "i-1234567890abcdef0" || !n.At.IsZero() || !n.Since.IsZero() {
			t.Fatalf("%s: %+v, %v", file, n, err)
		}
		real := strings.Replace(string(body), "yyyy-mm-ddThh:mm:ssZ", "2026-11-24T17:00:00Z", 1)
		// The warning's time starts the interruption: a job that completed
		// before it failed on its own.
		warned := time.Date(2026, 11, 24, 17, 0, 0, 0, time.UTC)
		if n, _, err := decodeInterruption([]byte(real)); err != nil || !n.At.Equal(warned) || !n.Since.Equal(warned) {
			t.Fatalf("%s with a real time: %+v, %v; want at and since %v", file, n, err, warned)
		}
	}
}

func TestDecodeRefusesEventsItCannotActOn(t *testing.T) {
	for name, body := range map[string]string{
		"not JSON":     `{"detail-type": `,
		"other source": `{"source":"aws.autoscaling","detail-type":"EC2 Spot Instance Interruption Warning","detail":{"instance-id":"i-1"}}`,
		"other type":   `{"source":"aws.ec2","detail-type":"EC2 Instance State-change Notification","detail":{"instance-id":"i-1"}}`,
		"no instance":  `{"source":"aws.ec2","detail-type":"EC2 Spot Instance Interruption Warning","detail":{}}`,
	} {
		if _, _, err := decodeInterruption([]byte(body)); !errors.Is(err, engine.ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
	if isEventBridgeEvent([]byte(`{"v":1,"kind":"create","instance":"runfleet-x-1-1"}`)) {
		t.Error("a runfleet message was taken for an EventBridge event")
	}
}
