package telemetry

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Namespace is the CloudWatch namespace runfleet's metrics are published in.
const Namespace = "runfleet"

// Unit is a CloudWatch metric unit.
type Unit string

// The units runfleet's metrics use.
const (
	UnitCount   Unit = "Count"
	UnitNone    Unit = "None"
	UnitSeconds Unit = "Seconds"
)

// Dimension is one dimension of a metric: a name and its value.
type Dimension struct {
	Name, Value string
}

// maxMetricsPerDocument is CloudWatch's limit on the metrics one EMF
// document may declare, and maxValuesPerMetric on the values one metric
// may carry in it; larger groups are split across documents.
const (
	maxMetricsPerDocument = 100
	maxValuesPerMetric    = 100
)

// EMF collects metrics and writes them as CloudWatch Embedded Metric Format
// documents: JSON log lines that CloudWatch Logs turns into metrics. On
// Lambda this replaces PutMetricData — no API call, no extra latency, no
// permission — since whatever the function prints reaches CloudWatch Logs.
//
// A document carries one value per dimension name, so Flush writes one line
// per distinct set of dimension values (every Put with the same dimensions
// shares a line). Common dimensions (the controller id) are on every metric.
// A metric Put with dimensions of its own is declared under two dimension
// sets: the common ones alone (the rollup, which alarms watch: one series
// per installation, whatever the labels) and all of them.
type EMF struct {
	w         io.Writer
	namespace string
	common    []Dimension
	now       func() time.Time

	mu     sync.Mutex
	groups map[string]*emfGroup
	order  []string
}

// emfGroup is the metrics sharing one set of dimension values.
type emfGroup struct {
	dims    []Dimension
	extra   [][]string // dimension sets declared besides the rollup and all dims
	metrics []emfMetric
	values  map[string][]float64
}

type emfMetric struct {
	Name string `json:"Name"`
	Unit Unit   `json:"Unit,omitempty"`
}

// NewEMF returns an EMF writing to w in namespace, with common on every
// metric.
func NewEMF(w io.Writer, namespace string, common ...Dimension) *EMF {
	return &EMF{w: w, namespace: namespace, common: slices.Clone(common), now: time.Now, groups: map[string]*emfGroup{}}
}

// WithClock makes e timestamp documents with now (tests pin the time).
func (e *EMF) WithClock(now func() time.Time) *EMF {
	e.now = now
	return e
}

// Put records value for the metric name with dims (after the common ones).
// Putting the same metric with the same dimensions again adds a sample: the
// document then carries an array of values, each a separate observation.
func (e *EMF) Put(name string, value float64, unit Unit, dims ...Dimension) {
	e.PutWithSets(name, value, unit, nil, dims...)
}

// PutWithSets is Put that also declares the metric under the common
// dimensions plus each of extra (names among dims'): a set an alarm needs
// between the rollup and all of the dimensions, such as a percentile per
// stage over every pool.
func (e *EMF) PutWithSets(name string, value float64, unit Unit, extra [][]string, dims ...Dimension) {
	all := append(slices.Clone(e.common), dims...)
	key := dimensionKey(all)
	for _, set := range extra {
		key += "\x02" + strings.Join(set, "\x00")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	g, ok := e.groups[key]
	if !ok {
		g = &emfGroup{dims: all, extra: extra, values: map[string][]float64{}}
		e.groups[key] = g
		e.order = append(e.order, key)
	}
	if _, seen := g.values[name]; !seen {
		g.metrics = append(g.metrics, emfMetric{Name: name, Unit: unit})
	}
	g.values[name] = append(g.values[name], value)
}

// Flush writes everything Put since the last Flush, one JSON line per set
// of dimension values (in the order first Put), and forgets it. Nothing is
// written when nothing was Put.
func (e *EMF) Flush() error {
	e.mu.Lock()
	groups := make([]*emfGroup, 0, len(e.order))
	for _, k := range e.order {
		groups = append(groups, e.groups[k])
	}
	e.groups, e.order = map[string]*emfGroup{}, nil
	e.mu.Unlock()

	timestamp := e.now().UnixMilli()
	var errs []error
	for _, g := range groups {
		for _, chunk := range g.chunks() {
			line, err := e.document(g, chunk, timestamp)
			if err == nil {
				_, err = e.w.Write(line)
			}
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("telemetry: write EMF: %w", errs[0])
	}
	return nil
}

// chunk is what one document of a group carries: up to
// maxMetricsPerDocument metrics, each with up to maxValuesPerMetric values.
type chunk struct {
	metrics []emfMetric
	values  map[string][]float64
}

// chunks splits g into documents within CloudWatch's limits. A metric
// with many samples (a busy histogram) continues in the next documents.
func (g *emfGroup) chunks() []chunk {
	var out []chunk
	for round := 0; ; round++ {
		from := round * maxValuesPerMetric
		var cur *chunk
		for _, m := range g.metrics {
			v := g.values[m.Name]
			if from >= len(v) {
				continue
			}
			if cur == nil || len(cur.metrics) == maxMetricsPerDocument {
				out = append(out, chunk{values: map[string][]float64{}})
				cur = &out[len(out)-1]
			}
			cur.metrics = append(cur.metrics, m)
			cur.values[m.Name] = v[from:min(from+maxValuesPerMetric, len(v))]
		}
		if cur == nil {
			return out
		}
	}
}

// document encodes one chunk of g as one EMF line.
func (e *EMF) document(g *emfGroup, c chunk, timestamp int64) ([]byte, error) {
	names := make([]string, len(g.dims))
	doc := map[string]any{}
	for i, d := range g.dims {
		names[i] = d.Name
		doc[d.Name] = d.Value
	}
	for _, m := range c.metrics {
		if v := c.values[m.Name]; len(v) == 1 {
			doc[m.Name] = v[0]
		} else {
			doc[m.Name] = v
		}
	}
	sets := [][]string{names}
	if len(names) > len(e.common) {
		common := names[:len(e.common):len(e.common)]
		sets = [][]string{common, names}
		for _, extra := range g.extra {
			sets = append(sets, append(slices.Clone(common), extra...))
		}
	}
	doc["_aws"] = map[string]any{
		"Timestamp": timestamp,
		"CloudWatchMetrics": []any{map[string]any{
			"Namespace":  e.namespace,
			"Dimensions": sets,
			"Metrics":    c.metrics,
		}},
	}
	line, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return append(line, '\n'), nil
}

// dimensionKey identifies a set of dimension values regardless of order.
func dimensionKey(dims []Dimension) string {
	parts := make([]string, len(dims))
	for i, d := range dims {
		parts[i] = d.Name + "\x00" + d.Value
	}
	sort.Strings(parts)
	return strings.Join(parts, "\x01")
}
