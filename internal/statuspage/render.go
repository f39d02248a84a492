package statuspage

import (
	"bytes"
	"fmt"
	"html"
	"strconv"
)

// render writes the page. It is plain Go rather than html/template on
// purpose: text/template finds methods by name through reflection, which
// makes the linker keep every method of every type linked into the binary
// (the whole EC2 SDK): the runfleet binary grew from 22 to 74 MB and its
// idle memory by 10 MiB with it. Every text that comes from outside —
// names, labels, repository, faults — goes through esc; numbers and the
// page's own words do not need to.
func render(b *bytes.Buffer, v *view, css string, refreshSeconds int) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="refresh" content="%d">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>runfleet status</title>
<style>%s</style>
</head>
<body>
<header>
  <h1>runfleet</h1>
  <span class="meta" id="generated">as of %s; refreshes every %d s</span>
</header>
`, refreshSeconds, css, esc(v.GeneratedAt), refreshSeconds)
	renderPools(b, v)
	renderInstances(b, v)
	renderJobs(b, v)
	renderChart(b, &v.Chart)
	renderTransitions(b, v)
	p(`<footer>read-only; transitions and queue times are kept in this process's memory and start empty at each restart</footer>
</body>
</html>
`)
}

func renderPools(b *bytes.Buffer, v *view) {
	b.WriteString(`<section id="pools">
<h2>Pools</h2>
<table>
<thead><tr><th>pool</th><th class="num">live</th><th class="num">max</th><th class="num">waiting for capacity</th><th class="num">open jobs</th><th class="num">cost, 7 days</th><th>warm: forecast beside what came</th></tr></thead>
<tbody>
`)
	for _, r := range v.Pools {
		full := ""
		if r.Max > 0 && r.Live >= r.Max {
			full = " full"
		}
		fmt.Fprintf(b, `<tr class="pool" data-pool="%s" data-live="%d" data-max="%d" data-waiting="%d" data-cost-usd="%.6f" data-cost-unknown="%d" data-warm="%d">
  <td>%s</td><td class="num live%s">%d</td><td class="num max">%d</td>
  <td class="num waiting">%d</td><td class="num open">%d</td><td class="num cost">%s</td><td class="warm">%s</td>
</tr>
`, esc(r.Name), r.Live, r.Max, r.Waiting, r.CostUSD, r.CostUnknown, r.WarmRunners, esc(r.Name), full, r.Live, r.Max, r.Waiting, r.Open, esc(r.Cost), esc(r.Warm))
	}
	if len(v.Pools) == 0 {
		b.WriteString(`<tr><td colspan="7" class="empty">no pools configured</td></tr>` + "\n")
	}
	b.WriteString("</tbody>\n</table>\n</section>\n\n")
}

func renderInstances(b *bytes.Buffer, v *view) {
	fmt.Fprintf(b, `<section id="instances">
<h2>Instances <span class="count">(%d live)</span></h2>
<div class="chips">`, len(v.Instances))
	for _, c := range v.StatusCounts {
		s := esc(string(c.Status))
		fmt.Fprintf(b, `<span class="chip status status-%s" data-status="%s">%s: %d</span>`, s, s, s, c.Count)
	}
	b.WriteString(`</div>
<table>
<thead><tr><th>instance</th><th>pool</th><th>status</th><th>runner</th><th class="num">job</th><th>age</th><th>in status</th><th>retry</th><th>last fault</th></tr></thead>
<tbody>
`)
	for _, r := range v.Instances {
		s := esc(r.Status)
		fmt.Fprintf(b, `<tr class="instance" data-instance="%s" data-status="%s">
  <td>%s</td><td>%s</td><td class="status status-%s">%s</td><td>%s</td>
  <td class="num">%d</td><td>%s</td><td>%s</td><td>%s</td><td class="fault">%s</td>
</tr>
`, esc(r.Name), s, esc(r.Name), esc(r.Pool), s, s, esc(r.Runner), r.Job, esc(r.Age), esc(r.InStatus), esc(r.Retry), esc(r.Fault))
	}
	if len(v.Instances) == 0 {
		b.WriteString(`<tr><td colspan="9" class="empty">no live instances</td></tr>` + "\n")
	}
	b.WriteString("</tbody>\n</table>\n</section>\n\n")
}

func renderJobs(b *bytes.Buffer, v *view) {
	fmt.Fprintf(b, `<section id="jobs">
<h2>Open jobs <span class="count">(%d)</span></h2>
<table>
<thead><tr><th>job#attempt</th><th>pool</th><th>repository</th><th>status</th><th>instance</th><th>waited</th><th>waiting for</th><th>labels</th></tr></thead>
<tbody>
`, len(v.Jobs))
	for _, r := range v.Jobs {
		fmt.Fprintf(b, `<tr class="job" data-job="%s" data-status="%s" data-wait="%s">
  <td><a class="why" href="%s" title="why is it waiting?">%s</a></td><td>%s</td><td>%s</td><td class="status">%s</td><td>%s</td><td>%s</td><td class="waiting-for">%s</td><td>%s</td>
</tr>
`, esc(r.Key), esc(r.Status), esc(r.Wait), esc(whyHref(r.ID, v.Token)), esc(r.Key), esc(r.Pool), esc(r.Repository), esc(r.Status), esc(r.Instance), esc(r.Waited), esc(r.WaitingFor), esc(r.Labels))
	}
	if len(v.Jobs) == 0 {
		b.WriteString(`<tr><td colspan="8" class="empty">no open jobs: every job has a runner</td></tr>` + "\n")
	}
	b.WriteString("</tbody>\n</table>\n</section>\n\n")
}

func renderChart(b *bytes.Buffer, c *chart) {
	fmt.Fprintf(b, `<section id="queue-time">
<h2>Queue time, last hour <span class="count">(%d %s in memory)</span></h2>
<div class="chips legend">`, c.Samples, plural(c.Samples, "sample", "samples"))
	for _, s := range c.Stages {
		st := esc(s.Stage)
		fmt.Fprintf(b, `<span class="chip stage-%s" data-stage="%s" data-count="%d">queued → %s: %d %s, p50 %s, p95 %s, max %s</span>`,
			st, st, s.Count, st, s.Count, plural(s.Count, "job", "jobs"), esc(s.P50), esc(s.P95), esc(s.Max))
	}
	fmt.Fprintf(b, `</div>
<svg class="chart" id="queue-time-chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" role="img" aria-label="queue time of each job over the last hour">
`, c.Width, c.Height)
	for _, t := range c.YTicks {
		pos := coord(t.Pos)
		fmt.Fprintf(b, `<line class="grid" x1="%d" x2="%d" y1="%s" y2="%s"/><text class="axis" x="%d" y="%s" text-anchor="end" dominant-baseline="middle">%s</text>
`, c.PlotLeft, c.PlotLeft+c.PlotWidth, pos, pos, c.PlotLeft-6, pos, esc(t.Label))
	}
	for _, t := range c.XTicks {
		fmt.Fprintf(b, `<text class="axis" x="%s" y="%d" text-anchor="middle">%s</text>
`, coord(t.Pos), c.Height-8, esc(t.Label))
	}
	for _, pt := range c.Points {
		fmt.Fprintf(b, `<circle class="point stage-%s" cx="%s" cy="%s" r="3.5"><title>%s</title></circle>
`, esc(pt.Stage), coord(pt.X), coord(pt.Y), esc(pt.Title))
	}
	if len(c.Points) == 0 {
		fmt.Fprintf(b, `<text class="axis" x="%d" y="%d" text-anchor="middle">no job reached a runner in the last hour</text>`, c.Width/2, c.Height/2)
	}
	b.WriteString("\n</svg>\n")
	if c.Dropped > 0 {
		fmt.Fprintf(b, `<p class="empty">the %d oldest samples are not drawn</p>`+"\n", c.Dropped)
	}
	b.WriteString("</section>\n\n")
}

func renderTransitions(b *bytes.Buffer, v *view) {
	fmt.Fprintf(b, `<section id="transitions">
<h2>Recent transitions <span class="count">(last %d kept in memory)</span></h2>
<table>
<thead><tr><th>when</th><th>instance</th><th>pool</th><th>from</th><th>to</th><th>fault</th></tr></thead>
<tbody>
`, v.TransitionsKept)
	for _, r := range v.Transitions {
		from, to := esc(r.From), esc(r.To)
		fmt.Fprintf(b, `<tr class="transition" data-instance="%s" data-from="%s" data-to="%s">
  <td title="%s">%s</td><td>%s</td><td>%s</td><td class="status status-%s">%s</td><td class="status status-%s">%s</td><td class="fault">%s</td>
</tr>
`, esc(r.Instance), from, to, esc(r.At), esc(r.Ago), esc(r.Instance), esc(r.Pool), from, from, to, to, esc(r.Fault))
	}
	if len(v.Transitions) == 0 {
		b.WriteString(`<tr><td colspan="6" class="empty">no status change since this server started</td></tr>` + "\n")
	}
	b.WriteString("</tbody>\n</table>\n</section>\n")
}

// esc escapes text for an element's content or a quoted attribute.
func esc(s string) string { return html.EscapeString(s) }

func coord(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
