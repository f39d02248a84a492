package telemetry

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// CloudWatch's limits on one EMF document (the embedded metric format
// specification): metrics declared, values per metric, dimensions per
// dimension set, and the size of the log event. maxDocumentBytes stays a
// KiB below the 256 KiB event limit for whatever the runtime puts around
// a line.
const (
	maxMetricsPerDocument = 100
	maxValuesPerMetric    = 100
	maxDimensionsPerSet   = 30
	maxDocumentBytes      = 255 << 10
)

// InvalidMetricError is a metric CloudWatch would reject, left out of the
// lines Flush writes.
type InvalidMetricError struct {
	Metric string
	Reason string
}

func (e *InvalidMetricError) Error() string {
	return fmt.Sprintf("telemetry: EMF metric %q left out: %s", e.Metric, e.Reason)
}

// piece is what one directive of a document carries: some metrics of a
// group, each with at most maxValuesPerMetric values.
type piece struct {
	group   *emfGroup
	metrics []emfMetric
	values  map[string][]float64
	size    int // at least the bytes it adds to a document
}

// document is one EMF line being filled: the dimension values at its root
// (one per name) and the metric names there (each once).
type document struct {
	dims    map[string]string
	names   map[string]bool
	pieces  []piece
	metrics int
	size    int
}

// pack spreads groups over as few documents as the limits allow, first
// fit in the order the groups were first Put, so the lines are the same
// for the same Puts. A group whose values exceed one directive continues
// in later documents: its metric names are taken in the earlier ones.
func pack(namespace string, timestamp int64, groups []*emfGroup) ([]*document, []error) {
	base := len(`{"_aws":{"Timestamp":,"CloudWatchMetrics":[]}}`+"\n") + len(strconv.FormatInt(timestamp, 10))
	var docs []*document
	var errs []error
	for _, g := range groups {
		pieces, err := g.pieces(namespace, base)
		errs = append(errs, err...)
		for _, p := range pieces {
			var into *document
			for _, d := range docs {
				if d.fits(p) {
					into = d
					break
				}
			}
			if into == nil {
				into = &document{dims: map[string]string{}, names: map[string]bool{}, size: base}
				docs = append(docs, into)
			}
			into.add(p)
		}
	}
	return docs, errs
}

// pieces cuts g into directives within the limits: rounds of at most
// maxValuesPerMetric values per metric, each round at most
// maxMetricsPerDocument metrics, halved again while one would not fit an
// empty document on its own.
func (g *emfGroup) pieces(namespace string, base int) ([]piece, []error) {
	for _, set := range g.sets {
		if len(set) > maxDimensionsPerSet {
			var errs []error
			for _, m := range g.metrics {
				errs = append(errs, &InvalidMetricError{Metric: m.Name, Reason: fmt.Sprintf("a dimension set of %d dimensions (CloudWatch takes %d)", len(set), maxDimensionsPerSet)})
			}
			return nil, errs
		}
	}
	var errs []error
	values := make(map[string][]float64, len(g.values))
	for _, m := range g.metrics {
		for _, v := range g.values[m.Name] {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				errs = append(errs, &InvalidMetricError{Metric: m.Name, Reason: fmt.Sprintf("value %v is not a number CloudWatch takes", v)})
				continue
			}
			values[m.Name] = append(values[m.Name], v)
		}
	}
	var out []piece
	for from := 0; ; from += maxValuesPerMetric {
		var round []emfMetric
		for _, m := range g.metrics {
			if len(values[m.Name]) > from {
				round = append(round, m)
			}
		}
		if len(round) == 0 {
			return out, errs
		}
		for len(round) > 0 {
			n := min(len(round), maxMetricsPerDocument)
			p := g.piece(namespace, round[:n], values, from)
			for n > 1 && base+p.size > maxDocumentBytes {
				n /= 2
				p = g.piece(namespace, round[:n], values, from)
			}
			out = append(out, p)
			round = round[n:]
		}
	}
}

// piece is the directive for metrics with their values from index from.
func (g *emfGroup) piece(namespace string, metrics []emfMetric, values map[string][]float64, from int) piece {
	p := piece{group: g, metrics: metrics, values: make(map[string][]float64, len(metrics))}
	directive, _ := json.Marshal(directiveOf(namespace, g.sets, metrics))
	p.size = len(directive) + 1
	for _, d := range g.dims {
		p.size += memberSize(d.Name, d.Value)
	}
	for _, m := range metrics {
		v := values[m.Name]
		p.values[m.Name] = v[from:min(from+maxValuesPerMetric, len(v))]
		p.size += memberSize(m.Name, valueOf(p.values[m.Name]))
	}
	return p
}

// memberSize is the bytes of "name":value, with the comma before it.
func memberSize(name string, value any) int {
	k, _ := json.Marshal(name)
	v, _ := json.Marshal(value)
	return len(k) + 1 + len(v) + 1
}

// fits reports whether p can join d: no dimension with another value, no
// metric already there, no name used as both, and within the limits. A
// piece's size counts its dimensions even when d has them, so d stays
// under maxDocumentBytes.
func (d *document) fits(p piece) bool {
	if d.metrics+len(p.metrics) > maxMetricsPerDocument || d.size+p.size > maxDocumentBytes {
		return false
	}
	for _, dim := range p.group.dims {
		if v, ok := d.dims[dim.Name]; (ok && v != dim.Value) || d.names[dim.Name] {
			return false
		}
	}
	for _, m := range p.metrics {
		if _, ok := d.dims[m.Name]; ok || d.names[m.Name] {
			return false
		}
	}
	return true
}

func (d *document) add(p piece) {
	for _, dim := range p.group.dims {
		d.dims[dim.Name] = dim.Value
	}
	for _, m := range p.metrics {
		d.names[m.Name] = true
	}
	d.pieces = append(d.pieces, p)
	d.metrics += len(p.metrics)
	d.size += p.size
}

// encode writes d as one EMF line: its dimension values and metric values
// as root members, one metric directive per piece.
func (d *document) encode(namespace string, timestamp int64) ([]byte, error) {
	root := make(map[string]any, len(d.dims)+d.metrics+1)
	for name, value := range d.dims {
		root[name] = value
	}
	directives := make([]any, len(d.pieces))
	for i, p := range d.pieces {
		for _, m := range p.metrics {
			root[m.Name] = valueOf(p.values[m.Name])
		}
		directives[i] = directiveOf(namespace, p.group.sets, p.metrics)
	}
	root["_aws"] = map[string]any{"Timestamp": timestamp, "CloudWatchMetrics": directives}
	line, err := json.Marshal(root)
	if err != nil {
		return nil, err
	}
	return append(line, '\n'), nil
}

func directiveOf(namespace string, sets [][]string, metrics []emfMetric) map[string]any {
	return map[string]any{"Namespace": namespace, "Dimensions": sets, "Metrics": metrics}
}

// valueOf is a metric's root member: one observation as a number, more as
// an array of them.
func valueOf(v []float64) any {
	if len(v) == 1 {
		return v[0]
	}
	return v
}
