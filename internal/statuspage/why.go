package statuspage

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/runfleet/runfleet/internal/engine"
)

// whyHref is a job row's link to its timeline, carrying the page's
// ?token= so the click is authorised as the page was.
func whyHref(jobID int64, token string) string {
	href := fmt.Sprintf("why/%d", jobID)
	if token != "" {
		href += "?token=" + url.QueryEscape(token)
	}
	return href
}

// renderWhy writes one job's timeline (`runfleet why`'s text) as a page.
// It returns the status to answer with when it cannot.
func (p *page) renderWhy(ctx context.Context, b *bytes.Buffer, ref, token string) (int, error) {
	id, err := engine.ParseJobRef(ref)
	if err != nil {
		return http.StatusBadRequest, err
	}
	tl, err := p.src.Why(ctx, id)
	if err != nil {
		p.log.ErrorContext(ctx, "status page could not read the job", "job_id", id, "error", err)
		return http.StatusInternalServerError, err
	}
	var text bytes.Buffer
	if err := tl.Text(&text); err != nil {
		return http.StatusInternalServerError, err
	}
	back := "../"
	if token != "" {
		back += "?token=" + url.QueryEscape(token)
	}
	fmt.Fprintf(b, `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>runfleet: why job %d</title>
<style>%s</style>
</head>
<body>
<header>
  <h1>runfleet</h1>
  <span class="meta"><a href="%s">back to the status page</a></span>
</header>
<section id="why" data-job="%d" data-reason="%s">
<h2>Job %d</h2>
<p class="answer">%s</p>
<pre>%s</pre>
</section>
</body>
</html>
`, id, pageCSS, esc(back), id, esc(tl.Answer.Reason), id, esc(tl.Answer.Sentence), esc(text.String()))
	return http.StatusOK, nil
}
