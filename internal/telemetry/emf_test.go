package telemetry_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/telemetry"
	"github.com/runfleet/runfleet/internal/testclock"
)

func emfLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var docs []map[string]any
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var doc map[string]any
		if err := json.Unmarshal([]byte(line), &doc); err != nil {
			t.Fatalf("EMF line is not one JSON object: %q: %v", line, err)
		}
		docs = append(docs, doc)
	}
	return docs
}

// The document is exactly what the EMF specification asks for: an _aws
// metadata object with a millisecond Timestamp and one metric directive
// (Namespace, Dimensions as an array of dimension sets, Metrics with Name
// and Unit), and every dimension and metric value as a top-level member.
// A metric with dimensions of its own is also declared under the common
// dimensions alone: the rollup alarms watch.
func TestEMFDocumentStructure(t *testing.T) {
	var out bytes.Buffer
	clock := testclock.At(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	emf := telemetry.NewEMF(&out, telemetry.Namespace, telemetry.Dimension{Name: "ControllerId", Value: "ctl-1"}).WithClock(clock.Now)
	emf.Put("GitHubRateLimitRemaining", 4200, telemetry.UnitCount, telemetry.Dimension{Name: "Installation", Value: "77"})
	if err := emf.Flush(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(out.String(), "\n") || strings.Count(out.String(), "\n") != 1 {
		t.Fatalf("want exactly one line, got %q", out.String())
	}
	var got any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"_aws": map[string]any{
			"Timestamp": float64(clock.Now().UnixMilli()),
			"CloudWatchMetrics": []any{map[string]any{
				"Namespace":  "runfleet",
				"Dimensions": []any{[]any{"ControllerId"}, []any{"ControllerId", "Installation"}},
				"Metrics":    []any{map[string]any{"Name": "GitHubRateLimitRemaining", "Unit": "Count"}},
			}},
		},
		"ControllerId":             "ctl-1",
		"Installation":             "77",
		"GitHubRateLimitRemaining": float64(4200),
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("EMF document\n got %s\nwant %s", mustJSON(t, got), mustJSON(t, want))
	}
}

// Metrics with different dimension values cannot share a document (one
// value per dimension name), so each set gets its own line; metrics with
// the same values share one.
func TestEMFGroupsByDimensionValues(t *testing.T) {
	var out bytes.Buffer
	emf := telemetry.NewEMF(&out, telemetry.Namespace, telemetry.Dimension{Name: "ControllerId", Value: "c"})
	emf.Put("LiveInstances", 3, telemetry.UnitCount, telemetry.Dimension{Name: "Pool", Value: "a"}, telemetry.Dimension{Name: "Status", Value: "running"})
	emf.Put("LiveInstances", 1, telemetry.UnitCount, telemetry.Dimension{Name: "Pool", Value: "b"}, telemetry.Dimension{Name: "Status", Value: "running"})
	emf.Put("Other", 9, telemetry.UnitNone, telemetry.Dimension{Name: "Status", Value: "running"}, telemetry.Dimension{Name: "Pool", Value: "a"})
	if err := emf.Flush(); err != nil {
		t.Fatal(err)
	}
	docs := emfLines(t, out.String())
	if len(docs) != 2 {
		t.Fatalf("got %d lines, want 2 (one per pool): %s", len(docs), out.String())
	}
	if docs[0]["Pool"] != "a" || docs[0]["LiveInstances"] != float64(3) || docs[0]["Other"] != float64(9) {
		t.Errorf("first document %v, want pool a with LiveInstances 3 and Other 9", docs[0])
	}
	if docs[1]["Pool"] != "b" || docs[1]["LiveInstances"] != float64(1) {
		t.Errorf("second document %v, want pool b with LiveInstances 1", docs[1])
	}
	metrics := docs[0]["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)["Metrics"].([]any)
	if len(metrics) != 2 {
		t.Errorf("first document declares %v, want LiveInstances and Other", metrics)
	}
}

// A metric Put twice with the same dimensions is two observations: an array
// of values, declared once.
func TestEMFRepeatedMetricIsAnArray(t *testing.T) {
	var out bytes.Buffer
	emf := telemetry.NewEMF(&out, telemetry.Namespace)
	emf.Put("Latency", 1, telemetry.UnitNone)
	emf.Put("Latency", 2, telemetry.UnitNone)
	if err := emf.Flush(); err != nil {
		t.Fatal(err)
	}
	doc := emfLines(t, out.String())[0]
	if !reflect.DeepEqual(doc["Latency"], []any{float64(1), float64(2)}) {
		t.Fatalf("Latency = %v, want [1 2]", doc["Latency"])
	}
	if n := len(doc["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)["Metrics"].([]any)); n != 1 {
		t.Fatalf("declared %d metrics, want 1", n)
	}
}

// CloudWatch rejects a directive with more than 100 metrics; a larger group
// is split, and a Flush empties the writer.
func TestEMFSplitsLargeGroupsAndResets(t *testing.T) {
	var out bytes.Buffer
	emf := telemetry.NewEMF(&out, telemetry.Namespace)
	for i := range 150 {
		emf.Put(fmt.Sprintf("M%03d", i), float64(i), telemetry.UnitCount)
	}
	if err := emf.Flush(); err != nil {
		t.Fatal(err)
	}
	docs := emfLines(t, out.String())
	if len(docs) != 2 {
		t.Fatalf("got %d documents, want 2", len(docs))
	}
	for i, want := range []int{100, 50} {
		got := len(docs[i]["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)["Metrics"].([]any))
		if got != want {
			t.Errorf("document %d declares %d metrics, want %d", i, got, want)
		}
	}
	out.Reset()
	if err := emf.Flush(); err != nil || out.Len() != 0 {
		t.Fatalf("second Flush wrote %q (err %v), want nothing", out.String(), err)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestEMFFlushReportsWriteErrors(t *testing.T) {
	emf := telemetry.NewEMF(failingWriter{}, telemetry.Namespace)
	emf.Put("X", 1, telemetry.UnitCount)
	if err := emf.Flush(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Flush error %v, want the write error", err)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A metric with only the common dimensions is declared once, under them.
func TestEMFCommonOnlyMetricHasOneDimensionSet(t *testing.T) {
	var out bytes.Buffer
	emf := telemetry.NewEMF(&out, telemetry.Namespace, telemetry.Dimension{Name: "controller_id", Value: "c"})
	emf.Put("runfleet_dead_letters", 0, telemetry.UnitCount)
	if err := emf.Flush(); err != nil {
		t.Fatal(err)
	}
	sets := emfLines(t, out.String())[0]["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)["Dimensions"]
	if !reflect.DeepEqual(sets, []any{[]any{"controller_id"}}) {
		t.Fatalf("dimension sets %v, want only [controller_id]", sets)
	}
}

// CloudWatch takes at most 100 values per metric in one document: a busy
// histogram continues in the next line, and no value is lost.
func TestEMFSplitsLongValueArrays(t *testing.T) {
	var out bytes.Buffer
	emf := telemetry.NewEMF(&out, telemetry.Namespace)
	for i := range 250 {
		emf.Put("Wait", float64(i), telemetry.UnitSeconds)
	}
	emf.Put("Once", 1, telemetry.UnitCount)
	if err := emf.Flush(); err != nil {
		t.Fatal(err)
	}
	docs := emfLines(t, out.String())
	if len(docs) != 3 {
		t.Fatalf("got %d documents, want 3 (100 + 100 + 50 values)", len(docs))
	}
	var seen []float64
	for i, doc := range docs {
		values := doc["Wait"].([]any)
		if len(values) > 100 {
			t.Errorf("document %d carries %d values", i, len(values))
		}
		for _, v := range values {
			seen = append(seen, v.(float64))
		}
		if _, ok := doc["Once"]; ok != (i == 0) {
			t.Errorf("document %d: Once present = %v, want it only in the first", i, ok)
		}
	}
	for i, v := range seen {
		if v != float64(i) {
			t.Fatalf("value %d is %v: values lost or reordered", i, v)
		}
	}
}

// Extra dimension sets are declared after the rollup and the full set,
// each with the common dimensions first. Metrics with the same dimension
// values but different sets are different directives; they share a line.
func TestEMFExtraDimensionSets(t *testing.T) {
	var out bytes.Buffer
	emf := telemetry.NewEMF(&out, telemetry.Namespace, telemetry.Dimension{Name: "controller_id", Value: "c"})
	dims := []telemetry.Dimension{{Name: "pool", Value: "p"}, {Name: "stage", Value: "started"}}
	emf.PutWithSets("wait", 3, telemetry.UnitSeconds, [][]string{{"stage"}}, dims...)
	emf.Put("other", 1, telemetry.UnitCount, dims...)
	if err := emf.Flush(); err != nil {
		t.Fatal(err)
	}
	docs := emfLines(t, out.String())
	if len(docs) != 1 {
		t.Fatalf("%d documents, want 1: the dimension values agree", len(docs))
	}
	directives := docs[0]["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)
	if len(directives) != 2 {
		t.Fatalf("%d directives, want 2: different sets cannot share a directive", len(directives))
	}
	full := []any{[]any{"controller_id"}, []any{"controller_id", "pool", "stage"}}
	for i, want := range []struct {
		metric string
		sets   []any
	}{
		{"wait", append(slices.Clone(full), []any{"controller_id", "stage"})},
		{"other", full},
	} {
		d := directives[i].(map[string]any)
		if !reflect.DeepEqual(d["Dimensions"], want.sets) {
			t.Errorf("directive %d dimension sets %v, want %v", i, d["Dimensions"], want.sets)
		}
		if m := d["Metrics"].([]any); len(m) != 1 || m[0].(map[string]any)["Name"] != want.metric {
			t.Errorf("directive %d declares %v, want only %s", i, m, want.metric)
		}
	}
}
