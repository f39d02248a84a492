package telemetry_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/runfleet/runfleet/internal/telemetry"
)

// put is one observation as a caller makes it.
type put struct {
	metric string
	value  float64
	unit   telemetry.Unit
	extra  [][]string
	dims   []telemetry.Dimension
}

// series names what CloudWatch stores a value under: a metric, one of its
// dimension sets and the values of those dimensions.
func series(metric string, set []string, value func(string) string) string {
	names := slices.Clone(set)
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + "=" + value(n)
	}
	return metric + "{" + strings.Join(parts, ",") + "}"
}

// expected is what CloudWatch should extract from puts, worked out from the
// puts alone: each value under the rollup (common), all dimensions, and
// each extra set.
func expected(common []telemetry.Dimension, puts []put) (map[string][]float64, map[string]telemetry.Unit) {
	values, units := map[string][]float64{}, map[string]telemetry.Unit{}
	for _, p := range puts {
		all := append(slices.Clone(common), p.dims...)
		value := func(name string) string {
			for _, d := range all {
				if d.Name == name {
					return d.Value
				}
			}
			return "?"
		}
		names := func(ds []telemetry.Dimension) []string {
			var out []string
			for _, d := range ds {
				out = append(out, d.Name)
			}
			return out
		}
		sets := [][]string{names(all)}
		if len(p.dims) > 0 {
			sets = [][]string{names(common), names(all)}
			for _, x := range p.extra {
				sets = append(sets, append(names(common), x...))
			}
		}
		for _, set := range sets {
			k := series(p.metric, set, value)
			values[k] = append(values[k], p.value)
			units[k] = p.unit
		}
	}
	return values, units
}

// extracted reads EMF lines as CloudWatch does, checking every line
// against the specification's rules and limits on the way: an _aws block
// with a timestamp and directives; each directive's dimensions string
// members of the root and its metrics number or array members; no metric
// declared twice in a line; at most 100 metrics, 100 values a metric, 30
// dimensions a set and 256 KiB a line.
func extracted(t *testing.T, out string) (map[string][]float64, map[string]telemetry.Unit, int) {
	t.Helper()
	values, units := map[string][]float64{}, map[string]telemetry.Unit{}
	lines := emfLines(t, out)
	for i, line := range strings.SplitAfter(out, "\n") {
		if len(line) > 256<<10 {
			t.Errorf("line %d is %d bytes, over CloudWatch's 256 KiB event limit", i, len(line))
		}
	}
	for i, doc := range lines {
		aws, ok := doc["_aws"].(map[string]any)
		if !ok {
			t.Fatalf("line %d has no _aws object: %v", i, doc)
		}
		if _, ok := aws["Timestamp"].(float64); !ok {
			t.Errorf("line %d: Timestamp %v is not a number", i, aws["Timestamp"])
		}
		declared, metrics := map[string]bool{}, 0
		for _, raw := range aws["CloudWatchMetrics"].([]any) {
			directive := raw.(map[string]any)
			if directive["Namespace"] != telemetry.Namespace {
				t.Errorf("line %d: namespace %v", i, directive["Namespace"])
			}
			var sets [][]string
			for _, s := range directive["Dimensions"].([]any) {
				var set []string
				for _, n := range s.([]any) {
					name := n.(string)
					if _, ok := doc[name].(string); !ok {
						t.Errorf("line %d: dimension %s has no string value at the root: %v", i, name, doc[name])
					}
					set = append(set, name)
				}
				if len(set) > 30 {
					t.Errorf("line %d: dimension set of %d", i, len(set))
				}
				sets = append(sets, set)
			}
			for _, m := range directive["Metrics"].([]any) {
				def := m.(map[string]any)
				name := def["Name"].(string)
				if declared[name] {
					t.Errorf("line %d declares %s twice", i, name)
				}
				declared[name] = true
				metrics++
				var vs []float64
				switch v := doc[name].(type) {
				case float64:
					vs = []float64{v}
				case []any:
					if len(v) > 100 {
						t.Errorf("line %d: %s carries %d values", i, name, len(v))
					}
					for _, x := range v {
						vs = append(vs, x.(float64))
					}
				default:
					t.Fatalf("line %d: %s value %v is neither a number nor an array", i, name, doc[name])
				}
				unit, _ := def["Unit"].(string)
				for _, set := range sets {
					k := series(name, set, func(n string) string { return doc[n].(string) })
					values[k] = append(values[k], vs...)
					units[k] = telemetry.Unit(unit)
				}
			}
		}
		if metrics > 100 {
			t.Errorf("line %d declares %d metrics", i, metrics)
		}
	}
	return values, units, len(lines)
}

// roundTrip puts puts, flushes, and fails unless CloudWatch would extract
// exactly what the puts say; it returns the number of lines.
func roundTrip(t *testing.T, common []telemetry.Dimension, puts []put) int {
	t.Helper()
	var out bytes.Buffer
	emf := telemetry.NewEMF(&out, telemetry.Namespace, common...)
	for _, p := range puts {
		emf.PutWithSets(p.metric, p.value, p.unit, p.extra, p.dims...)
	}
	if err := emf.Flush(); err != nil {
		t.Fatal(err)
	}
	wantValues, wantUnits := expected(common, puts)
	gotValues, gotUnits, lines := extracted(t, out.String())
	// A series' values all carry the flush's timestamp: CloudWatch keeps
	// them as a multiset, and a rollup gathers them from several series.
	for _, m := range []map[string][]float64{wantValues, gotValues} {
		for _, v := range m {
			slices.Sort(v)
		}
	}
	if !reflect.DeepEqual(gotValues, wantValues) {
		for k, v := range wantValues {
			if !reflect.DeepEqual(gotValues[k], v) {
				t.Errorf("%s: extracted %v, put %v", k, gotValues[k], v)
			}
		}
		for k, v := range gotValues {
			if _, ok := wantValues[k]; !ok {
				t.Errorf("%s: extracted %v, never put", k, v)
			}
		}
	}
	if !reflect.DeepEqual(gotUnits, wantUnits) {
		t.Errorf("units %v, want %v", gotUnits, wantUnits)
	}
	return lines
}

func dim(name, value string) telemetry.Dimension {
	return telemetry.Dimension{Name: name, Value: value}
}

var controller = []telemetry.Dimension{dim("controller_id", "c")}

// A worker invocation's metrics agree on every dimension they share (one
// pool, one result): one line, one directive per dimension list, each
// metric once, and CloudWatch extracts exactly what was put.
func TestEMFMergesAgreeingDimensionValuesIntoOneLine(t *testing.T) {
	puts := []put{
		{metric: "queue_seconds", value: 2.5, unit: telemetry.UnitSeconds, extra: [][]string{{"stage"}}, dims: []telemetry.Dimension{dim("pool", "linux"), dim("stage", "created")}},
		{metric: "provider_ops", value: 1, unit: telemetry.UnitCount, extra: [][]string{{"result"}}, dims: []telemetry.Dimension{dim("pool", "linux"), dim("op", "create"), dim("result", "ok")}},
		{metric: "provider_seconds", value: 0.8, unit: telemetry.UnitSeconds, dims: []telemetry.Dimension{dim("pool", "linux"), dim("op", "create")}},
		{metric: "github_calls", value: 1, unit: telemetry.UnitCount, dims: []telemetry.Dimension{dim("operation", "jit"), dim("result", "ok")}},
		{metric: "rate_limit", value: 4999, unit: telemetry.UnitCount, dims: []telemetry.Dimension{dim("installation", "0")}},
		{metric: "passes", value: 1, unit: telemetry.UnitCount},
	}
	if lines := roundTrip(t, controller, puts); lines != 1 {
		t.Fatalf("%d lines, want 1", lines)
	}
}

// Dimension values that contradict (two pools, two results) or a metric
// seen again with other values cannot share a root: each gets a line of
// its own, and nothing is lost or attributed to the wrong series.
func TestEMFContradictingDimensionValuesSplitLines(t *testing.T) {
	puts := []put{
		{metric: "ops", value: 1, unit: telemetry.UnitCount, dims: []telemetry.Dimension{dim("pool", "a"), dim("op", "create"), dim("result", "ok")}},
		{metric: "ops", value: 1, unit: telemetry.UnitCount, dims: []telemetry.Dimension{dim("pool", "a"), dim("op", "delete"), dim("result", "ok")}},
		{metric: "calls", value: 3, unit: telemetry.UnitCount, dims: []telemetry.Dimension{dim("operation", "list"), dim("result", "error")}},
		{metric: "instances", value: 2, unit: telemetry.UnitCount, dims: []telemetry.Dimension{dim("pool", "b"), dim("status", "running")}},
		{metric: "waiting", value: 0, unit: telemetry.UnitCount},
	}
	// ops{create,ok} + waiting; ops{delete,ok}; calls{error} + instances{b}
	// (no shared dimension disagrees, pool is not on calls).
	if lines := roundTrip(t, controller, puts); lines != 3 {
		t.Fatalf("%d lines, want 3", lines)
	}
}

// Repeated observations of a series are one array, every sample kept in
// order (the queue-time alarm's p95 is taken over them); past 100 they
// continue in the next line.
func TestEMFRepeatedObservationsRoundTrip(t *testing.T) {
	var puts []put
	for i := range 230 {
		puts = append(puts, put{metric: "queue_seconds", value: float64(i) / 10, unit: telemetry.UnitSeconds, extra: [][]string{{"stage"}}, dims: []telemetry.Dimension{dim("pool", "p"), dim("stage", "started")}})
		if i%50 == 0 {
			puts = append(puts, put{metric: "webhooks", value: 1, unit: telemetry.UnitCount, dims: []telemetry.Dimension{dim("result", "accepted")}})
		}
	}
	if lines := roundTrip(t, controller, puts); lines != 3 {
		t.Fatalf("%d lines, want 3 (100 + 100 + 30 samples)", lines)
	}
}

// Many metrics, each its own directive: a line declares at most 100.
func TestEMFSplitsAtOneHundredMetricsAcrossDirectives(t *testing.T) {
	var puts []put
	for i := range 250 {
		puts = append(puts, put{metric: fmt.Sprintf("m%03d", i), value: float64(i), unit: telemetry.UnitCount, dims: []telemetry.Dimension{dim(fmt.Sprintf("d%03d", i), "v")}})
	}
	if lines := roundTrip(t, controller, puts); lines != 3 {
		t.Fatalf("%d lines, want 3 (100 + 100 + 50 metrics)", lines)
	}
}

// Long dimension values fill a line before 100 metrics do: it is cut
// below CloudWatch's 256 KiB event limit.
func TestEMFSplitsAtTheEventSizeLimit(t *testing.T) {
	long := strings.Repeat("x", 1000)
	var puts []put
	for g := range 12 {
		var dims []telemetry.Dimension
		for d := range 29 {
			dims = append(dims, dim(fmt.Sprintf("g%02d_d%02d", g, d), long))
		}
		puts = append(puts, put{metric: fmt.Sprintf("m%02d", g), value: 1, unit: telemetry.UnitCount, dims: dims})
	}
	if lines := roundTrip(t, controller, puts); lines < 2 {
		t.Fatalf("%d lines for ~350 KiB of dimensions, want them split", lines)
	}
}

// Whatever the mix, the lines say exactly what was put: a seeded random
// invocation's worth of puts over a small vocabulary.
func TestEMFRoundTripRandomPuts(t *testing.T) {
	pools, results, stages := []string{"a", "b", "c"}, []string{"ok", "error"}, []string{"created", "online", "started"}
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		pick := func(s []string) string { return s[rng.IntN(len(s))] }
		var puts []put
		for range rng.IntN(400) + 1 {
			switch rng.IntN(5) {
			case 0:
				puts = append(puts, put{metric: "queue_seconds", value: rng.Float64() * 60, unit: telemetry.UnitSeconds, extra: [][]string{{"stage"}}, dims: []telemetry.Dimension{dim("pool", pick(pools)), dim("stage", pick(stages))}})
			case 1:
				puts = append(puts, put{metric: "ops", value: 1, unit: telemetry.UnitCount, extra: [][]string{{"result"}}, dims: []telemetry.Dimension{dim("pool", pick(pools)), dim("op", pick([]string{"create", "delete"})), dim("result", pick(results))}})
			case 2:
				puts = append(puts, put{metric: "op_seconds", value: rng.Float64(), unit: telemetry.UnitSeconds, dims: []telemetry.Dimension{dim("pool", pick(pools)), dim("op", "create")}})
			case 3:
				puts = append(puts, put{metric: "calls", value: float64(rng.IntN(5)), unit: telemetry.UnitCount, dims: []telemetry.Dimension{dim("operation", pick([]string{"jit", "list"})), dim("result", pick(results))}})
			default:
				puts = append(puts, put{metric: "last_pass", value: 1.7e9, unit: telemetry.UnitNone})
			}
		}
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { roundTrip(t, controller, puts) })
	}
}

// A metric CloudWatch would reject (too many dimensions in a set, a value
// that is not a number) is left out with an error naming it; the metrics
// that would have shared its line are still written.
func TestEMFLeavesOutWhatCloudWatchWouldReject(t *testing.T) {
	var out bytes.Buffer
	emf := telemetry.NewEMF(&out, telemetry.Namespace, controller...)
	var wide []telemetry.Dimension
	for i := range 30 {
		wide = append(wide, dim(fmt.Sprintf("d%02d", i), "v"))
	}
	emf.Put("too_wide", 1, telemetry.UnitCount, wide...)
	emf.Put("not_a_number", math.NaN(), telemetry.UnitCount)
	emf.Put("fine", 1, telemetry.UnitCount)
	err := emf.Flush()
	var invalid *telemetry.InvalidMetricError
	if !errors.As(err, &invalid) || invalid.Metric != "too_wide" {
		t.Fatalf("Flush error %v, want an InvalidMetricError for too_wide", err)
	}
	docs := emfLines(t, out.String())
	if len(docs) != 1 || docs[0]["fine"] != float64(1) {
		t.Fatalf("lines %v, want one with fine = 1", out.String())
	}
	for _, left := range []string{"too_wide", "not_a_number"} {
		if _, ok := docs[0][left]; ok {
			t.Errorf("%s written: %v", left, docs[0])
		}
	}
}

// A metric named like another metric's dimension cannot share its root.
func TestEMFMetricAndDimensionNamesDoNotCollide(t *testing.T) {
	puts := []put{
		{metric: "m", value: 1, unit: telemetry.UnitCount, dims: []telemetry.Dimension{dim("pool", "p")}},
		{metric: "pool", value: 2, unit: telemetry.UnitCount},
	}
	if lines := roundTrip(t, controller, puts); lines != 2 {
		t.Fatalf("%d lines, want 2", lines)
	}
}

// One series group too large for a line on its own (long names, full
// arrays of long numbers) is halved until each part fits.
func TestEMFHalvesAGroupTooLargeForOneLine(t *testing.T) {
	dims := []telemetry.Dimension{dim("pool", "p")}
	var puts []put
	for m := range 100 {
		name := fmt.Sprintf("%s_%03d", strings.Repeat("m", 250), m)
		for v := range 100 {
			puts = append(puts, put{metric: name, value: 1.2345678901234567e300 * (1 + float64(v)/1000), unit: telemetry.UnitSeconds, dims: dims})
		}
	}
	if lines := roundTrip(t, controller, puts); lines < 2 {
		t.Fatalf("%d lines for one group of ~290 KiB, want it split", lines)
	}
}
