package settings_test

import (
	"errors"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/runfleet/runfleet/providers/settings"
)

func TestGetters(t *testing.T) {
	str := func(r *settings.Reader) any { return r.String("k") }
	strs := func(r *settings.Reader) any { return r.Strings("k") }
	boolean := func(r *settings.Reader) any { return r.Bool("k") }
	dur := func(r *settings.Reader) any { return r.Duration("k") }
	posDur := func(r *settings.Reader) any { return r.PositiveDuration("k") }
	type floatRead struct {
		F  float64
		OK bool
	}
	float := func(r *settings.Reader) any { f, ok := r.Float("k"); return floatRead{f, ok} }
	u64 := func(r *settings.Reader) any { return r.Uint64("k") }
	mapping := func(r *settings.Reader) any { return r.Map("k") }
	jsonText := func(r *settings.Reader) any { return string(r.JSON("k")) }

	cases := []struct {
		name    string
		value   any // set as "k"; absentValue leaves it out
		read    func(*settings.Reader) any
		want    any
		wantErr string // the whole of Err().Error(), "" for none
	}{
		{"string", "x", str, "x", ""},
		{"string absent", absentValue, str, "", ""},
		{"string null", nil, str, "", ""},
		{"string wrong type", 7, str, "", "k: want a string, got 7"},

		{"strings decoded", []any{"a", "b"}, strs, []string{"a", "b"}, ""},
		{"strings built in code", []string{"a"}, strs, []string{"a"}, ""},
		{"strings absent", absentValue, strs, []string(nil), ""},
		{"strings not a list", "a", strs, []string(nil), "k: want a list of strings, got a"},
		{"strings names each bad item", []any{"a", 1, true}, strs, []string(nil), "k[1]: want a string, got 1\nk[2]: want a string, got true"},

		{"bool", true, boolean, true, ""},
		{"bool absent", absentValue, boolean, false, ""},
		{"bool null", nil, boolean, false, ""},
		{"bool from string", "true", boolean, false, "k: want true or false, got true"},
		{"bool from number", 1, boolean, false, "k: want true or false, got 1"},

		{"duration", "1m30s", dur, 90 * time.Second, ""},
		{"duration zero", "0s", dur, time.Duration(0), ""},
		{"duration absent", absentValue, dur, time.Duration(0), ""},
		{"duration negative", "-1s", dur, time.Duration(0), `k: want a non-negative duration such as "50ms", got "-1s"`},
		{"duration unparsable", "soon", dur, time.Duration(0), `k: want a non-negative duration such as "50ms", got "soon"`},
		{"duration number", 50, dur, time.Duration(0), `k: want a duration such as "50ms", got 50`},
		{"positive duration", "2m", posDur, 2 * time.Minute, ""},
		{"positive duration absent", absentValue, posDur, time.Duration(0), ""},
		{"positive duration zero", "0s", posDur, time.Duration(0), `k: want a positive duration such as "50ms", got "0s"`},
		{"positive duration unparsable", "soon", posDur, time.Duration(0), `k: want a positive duration such as "50ms", got "soon"`},

		{"float from YAML int", 1, float, floatRead{1, true}, ""},
		{"float from int64", int64(-3), float, floatRead{-3, true}, ""},
		{"float from uint64", uint64(5), float, floatRead{5, true}, ""},
		{"float", 0.25, float, floatRead{0.25, true}, ""},
		{"float absent", absentValue, float, floatRead{}, ""},
		{"float NaN", math.NaN(), float, floatRead{}, "k: want a number, got NaN"},
		{"float from string", "half", float, floatRead{}, "k: want a number, got half"},

		{"uint64 from int", 42, u64, uint64(42), ""},
		{"uint64 from int64", int64(42), u64, uint64(42), ""},
		{"uint64 above 2^53 exact", uint64(1<<53 + 1), u64, uint64(1<<53 + 1), ""},
		{"uint64 largest", uint64(math.MaxUint64), u64, uint64(math.MaxUint64), ""},
		{"uint64 from JSON float", float64(7), u64, uint64(7), ""},
		{"uint64 absent", absentValue, u64, uint64(0), ""},
		{"uint64 negative", -1, u64, uint64(0), "k: want a non-negative integer, got -1"},
		{"uint64 negative int64", int64(-1), u64, uint64(0), "k: want a non-negative integer, got -1"},
		{"uint64 fraction", 1.5, u64, uint64(0), "k: want a non-negative integer, got 1.5"},
		{"uint64 too large", float64(1 << 64), u64, uint64(0), "k: want a non-negative integer, got 1.8446744073709552e+19"},
		{"uint64 infinite", math.Inf(1), u64, uint64(0), "k: want a non-negative integer, got +Inf"},
		{"uint64 from string", "1", u64, uint64(0), "k: want a non-negative integer, got 1"},

		{"map", map[string]any{"a": 1}, mapping, map[string]any{"a": 1}, ""},
		{"map absent", absentValue, mapping, map[string]any(nil), ""},
		{"map from list", []any{"a"}, mapping, map[string]any(nil), "k: want a map, got [a]"},

		{"JSON of a map", map[string]any{"a": []any{1, "b"}}, jsonText, `{"a":[1,"b"]}`, ""},
		{"JSON of a string", `{"a":1}`, jsonText, `"{\"a\":1}"`, ""},
		{"JSON absent", absentValue, jsonText, "", ""},
		{"JSON of a YAML map with other keys", map[any]any{1: "a"}, jsonText, "", "k: cannot be expressed as JSON: json: unsupported type: map[interface {}]interface {}"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := map[string]any{}
			if c.value != absentValue {
				m["k"] = c.value
			}
			r := settings.NewReader(m, "k")
			got := c.read(r)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %#v, want %#v", got, c.want)
			}
			gotErr := ""
			if err := r.Err(); err != nil {
				gotErr = err.Error()
			}
			if gotErr != c.wantErr {
				t.Errorf("Err() = %q, want %q", gotErr, c.wantErr)
			}
		})
	}
}

// absentValue marks a case whose key is not in the map at all.
var absentValue = &struct{}{}

func TestUnknownKeysComeFirstAndNameTheKnownOnes(t *testing.T) {
	r := settings.NewReader(map[string]any{"timeout": 5, "tiemout": "1s", "colour": "red"}, "timeout", "color")
	r.Duration("timeout")
	err := r.Err()
	want := "unknown setting colour, tiemout (known: timeout, color)\n" +
		`timeout: want a duration such as "50ms", got 5`
	if err == nil || err.Error() != want {
		t.Fatalf("Err() = %v, want %q", err, want)
	}
	var unknown *settings.UnknownKeysError
	if !errors.As(err, &unknown) || !reflect.DeepEqual(unknown.Unknown, []string{"colour", "tiemout"}) {
		t.Errorf("errors.As(UnknownKeysError) = %+v", unknown)
	}
	var bad *settings.Error
	if !errors.As(err, &bad) || bad.Key != "timeout" {
		t.Errorf("errors.As(Error) = %+v", bad)
	}
}

func TestEveryProblemIsKeptInReadingOrder(t *testing.T) {
	r := settings.NewReader(map[string]any{"a": 1, "b": "x", "c": true}, "a", "b", "c")
	r.String("a")
	r.Bool("b")
	if !r.Failed("a") || !r.Failed("b") || r.Failed("c") {
		t.Errorf("Failed: a=%t b=%t c=%t, want true true false", r.Failed("a"), r.Failed("b"), r.Failed("c"))
	}
	r.Fail("c", "%s is not allowed here", "true")
	want := "a: want a string, got 1\nb: want true or false, got x\nc: true is not allowed here"
	if err := r.Err(); err == nil || err.Error() != want {
		t.Errorf("Err() = %v, want %q", err, want)
	}
}

func TestNoSettingsNoProblems(t *testing.T) {
	r := settings.NewReader(nil, "a")
	if r.String("a") != "" || r.Bool("a") || r.Strings("a") != nil || r.JSON("a") != nil {
		t.Error("absent keys must read as zero values")
	}
	if err := r.Err(); err != nil {
		t.Errorf("Err() = %v", err)
	}
}
