package telemetry

import (
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
	UnitBytes   Unit = "Bytes"
)

// Dimension is one dimension of a metric: a name and its value.
type Dimension struct {
	Name, Value string
}

// EMF collects metrics and writes them as CloudWatch Embedded Metric Format
// documents: JSON log lines that CloudWatch Logs turns into metrics. On
// Lambda this replaces PutMetricData — no API call, no extra latency, no
// permission — since whatever the function prints reaches CloudWatch Logs.
//
// Common dimensions (the controller id) are on every metric. A metric Put
// with dimensions of its own is declared under two dimension sets: the
// common ones alone (the rollup, which alarms watch: one series per
// installation, whatever the labels) and all of them.
//
// Log ingestion is billed by the byte, and most of a document is the same
// for every metric (the _aws block, the timestamp, the common dimensions),
// so Flush packs as much as it can into each line (emfdocument.go): every
// series with the same dimension values is one metric directive, and
// directives whose dimension values do not contradict each other share a
// document. What CloudWatch extracts is the same as with one document per
// series: each metric under the same dimension sets, with the same values.
type EMF struct {
	w         io.Writer
	namespace string
	common    []Dimension
	now       func() time.Time

	mu     sync.Mutex
	groups map[string]*emfGroup
	order  []string
}

// emfGroup is the metrics sharing one set of dimension values and one list
// of dimension sets: one metric directive (more when its metrics or values
// exceed CloudWatch's limits).
type emfGroup struct {
	dims    []Dimension
	sets    [][]string // the dimension sets every metric of the group is declared under
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
// document then carries an array of values, each a separate observation
// (CloudWatch keeps every one, so percentiles see them all).
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
		g = &emfGroup{dims: all, sets: dimensionSets(all, len(e.common), extra), values: map[string][]float64{}}
		e.groups[key] = g
		e.order = append(e.order, key)
	}
	if _, seen := g.values[name]; !seen {
		g.metrics = append(g.metrics, emfMetric{Name: name, Unit: unit})
	}
	g.values[name] = append(g.values[name], value)
}

// Flush writes everything Put since the last Flush, as few JSON lines as
// CloudWatch's limits allow, and forgets it. Nothing is written when
// nothing was Put. A metric CloudWatch would reject (InvalidMetricError) is
// left out, so it cannot take the metrics sharing its line down with it.
func (e *EMF) Flush() error {
	e.mu.Lock()
	groups := make([]*emfGroup, 0, len(e.order))
	for _, k := range e.order {
		groups = append(groups, e.groups[k])
	}
	e.groups, e.order = map[string]*emfGroup{}, nil
	e.mu.Unlock()
	if len(groups) == 0 {
		return nil
	}

	timestamp := e.now().UnixMilli()
	docs, errs := pack(e.namespace, timestamp, groups)
	for _, d := range docs {
		line, err := d.encode(e.namespace, timestamp)
		if err == nil {
			_, err = e.w.Write(line)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("telemetry: write EMF: %w", err))
		}
	}
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// dimensionSets is what a metric with dims (the first commonLen of them
// common) is declared under: the rollup and all dims, then the extra sets.
func dimensionSets(dims []Dimension, commonLen int, extra [][]string) [][]string {
	names := make([]string, len(dims))
	for i, d := range dims {
		names[i] = d.Name
	}
	if len(names) == commonLen {
		return [][]string{names}
	}
	common := names[:commonLen:commonLen]
	sets := [][]string{common, names}
	for _, x := range extra {
		sets = append(sets, append(slices.Clone(common), x...))
	}
	return sets
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
