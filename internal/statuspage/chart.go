package statuspage

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
)

// Chart geometry, in SVG user units: the plot area sits inside margins
// that hold the axis labels.
const (
	chartWidth   = 860
	chartHeight  = 240
	chartLeft    = 56
	chartRight   = 16
	chartTop     = 12
	chartBottom  = 28
	maxPlotted   = 3000
	chartMinutes = int(SampleWindow / time.Minute)
)

// chart is the queue-time scatter of the last hour, laid out server-side
// so the page needs no script and no external asset.
type chart struct {
	Width, Height int
	PlotLeft      int
	PlotTop       int
	PlotWidth     int
	PlotHeight    int
	Points        []chartPoint
	YTicks        []chartTick
	XTicks        []chartTick
	Stages        []stageSummary
	Samples       int
	// Dropped counts samples not drawn (beyond maxPlotted; the summary
	// still counts them).
	Dropped int
}

type chartPoint struct {
	X, Y  float64
	Stage string
	Title string
}

type chartTick struct {
	Pos   float64
	Label string
}

type stageSummary struct {
	Stage         string
	Count         int
	P50, P95, Max string
}

// yScales are the chart's possible tops: the first at least as long as the
// longest wait is used, so the axis reads in round numbers.
var yScales = []time.Duration{
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour,
}

func newChart(samples []Sample, at time.Time) chart {
	c := chart{
		Width: chartWidth, Height: chartHeight, PlotLeft: chartLeft, PlotTop: chartTop,
		PlotWidth: chartWidth - chartLeft - chartRight, PlotHeight: chartHeight - chartTop - chartBottom,
		Samples: len(samples),
	}
	longest := time.Duration(0)
	for _, s := range samples {
		longest = max(longest, s.Waited)
	}
	top := yScales[len(yScales)-1]
	for _, s := range yScales {
		if s >= longest {
			top = s
			break
		}
	}
	for i := range 5 {
		frac := float64(i) / 4
		c.YTicks = append(c.YTicks, chartTick{
			Pos:   float64(c.PlotTop) + float64(c.PlotHeight)*(1-frac),
			Label: tickLabel(time.Duration(frac * float64(top))),
		})
	}
	for m := 0; m <= chartMinutes; m += 15 {
		label := "now"
		if m < chartMinutes {
			label = fmt.Sprintf("-%dm", chartMinutes-m)
		}
		c.XTicks = append(c.XTicks, chartTick{Pos: float64(c.PlotLeft) + float64(c.PlotWidth)*float64(m)/float64(chartMinutes), Label: label})
	}

	start := at.Add(-SampleWindow)
	plotted := samples
	if len(plotted) > maxPlotted {
		// The newest are drawn: they are what an operator looks at.
		c.Dropped = len(plotted) - maxPlotted
		plotted = plotted[c.Dropped:]
	}
	for _, s := range plotted {
		x := float64(c.PlotLeft) + float64(c.PlotWidth)*clamp01(float64(s.At.Sub(start))/float64(SampleWindow))
		y := float64(c.PlotTop) + float64(c.PlotHeight)*(1-clamp01(float64(s.Waited)/float64(top)))
		c.Points = append(c.Points, chartPoint{
			X: x, Y: y, Stage: string(s.Stage),
			Title: fmt.Sprintf("%s: %s %s after queued (%s)", s.Pool, s.Stage, HumanDuration(s.Waited), s.At.UTC().Format(time.TimeOnly)),
		})
	}
	c.Stages = summarize(samples)
	return c
}

// summarize gives each stage's count and percentiles over the window.
func summarize(samples []Sample) []stageSummary {
	waits := make(map[engine.QueueStage][]time.Duration)
	for _, s := range samples {
		waits[s.Stage] = append(waits[s.Stage], s.Waited)
	}
	out := make([]stageSummary, 0, len(engine.QueueStages))
	for _, stage := range engine.QueueStages {
		w := waits[stage]
		sum := stageSummary{Stage: string(stage), Count: len(w), P50: "-", P95: "-", Max: "-"}
		if len(w) > 0 {
			slices.Sort(w)
			sum.P50 = HumanDuration(percentile(w, 0.50))
			sum.P95 = HumanDuration(percentile(w, 0.95))
			sum.Max = HumanDuration(w[len(w)-1])
		}
		out = append(out, sum)
	}
	return out
}

// percentile of sorted by the nearest-rank method.
func percentile(sorted []time.Duration, p float64) time.Duration {
	rank := int(p*float64(len(sorted))+0.999999) - 1
	return sorted[min(max(rank, 0), len(sorted)-1)]
}

// tickLabel words an axis value exactly: a quarter of 2s is 500ms, and
// 1.5s must not read as 1s.
func tickLabel(d time.Duration) string {
	if d >= time.Second && d < time.Minute && d%time.Second != 0 {
		return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
	}
	return HumanDuration(d)
}

func clamp01(f float64) float64 { return min(max(f, 0), 1) }
