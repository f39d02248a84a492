package replay

import (
	"fmt"
	"html"
	"strings"
)

// Plot draws the acceptance reading as an SVG: for each trace, the idle
// machine-minutes per job of the adaptive pool and of a perfect forecast,
// each as a share of the cheapest static min_idle meeting the same p90,
// beside the bar (half). Hand-written SVG: no plotting dependency for one
// chart.
func Plot(verdicts []Verdict) string {
	const (
		left, top, rowH, barH, width = 150, 40, 44, 14, 420
		scaleMax                     = 1.0 // a ratio of 1: as costly as the static size
	)
	height := top + rowH*len(verdicts) + 50
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", left+width+80, height)
	fmt.Fprintf(&b, `<text x="%d" y="20" font-weight="bold">Idle machine-minutes per job, as a share of the cheapest static min_idle meeting p90 ≤ 10 s</text>`+"\n", 10)
	x := func(r float64) float64 { return left + width*min(r, scaleMax)/scaleMax }
	for i, v := range verdicts {
		y := top + rowH*i
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", left-8, y+barH+4, html.EscapeString(v.Trace))
		bars := []struct {
			r     float64
			color string
			label string
		}{{v.Ratio, "#1f77b4", "adaptive"}, {v.PerfectRatio, "#bbbbbb", "perfect forecast"}}
		for j, bar := range bars {
			by := y + j*(barH+2)
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"><title>%s %.2f</title></rect>`+"\n",
				left, by, x(bar.r)-left, barH, bar.color, bar.label, bar.r)
			fmt.Fprintf(&b, `<text x="%.1f" y="%d">%.2f</text>`+"\n", x(bar.r)+4, by+barH-2, bar.r)
		}
	}
	bottom := top + rowH*len(verdicts)
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#d62728" stroke-dasharray="4 3"/>`+"\n", x(0.5), top-6, x(0.5), bottom)
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" fill="#d62728" text-anchor="middle">the bar: half</text>`+"\n", x(0.5), bottom+14)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`+"\n", left, bottom, left+width, bottom)
	for _, r := range []float64{0, 0.25, 0.5, 0.75, 1} {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%.2f</text>`+"\n", x(r), bottom+28, r)
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" fill="#1f77b4"/><text x="%d" y="%d">adaptive pool</text>`+"\n", left, height-14, left+16, height-4)
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" fill="#bbbbbb"/><text x="%d" y="%d">perfect forecast (a bound: it reads the future)</text>`+"\n", left+130, height-14, left+146, height-4)
	b.WriteString("</svg>\n")
	return b.String()
}
