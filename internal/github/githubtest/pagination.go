package githubtest

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// GitHub's page sizes.
const (
	defaultPerPage = 30
	maxPerPage     = 100
)

// page is the slice of a list one call returns.
type page struct {
	number, perPage, last int
}

// paginate reads page/per_page as GitHub does: per_page defaults to 30 and
// is capped at 100; nonsense values fall back to the defaults.
func paginate(q url.Values, total int) page {
	p := page{number: 1, perPage: defaultPerPage}
	if n, err := strconv.Atoi(q.Get("per_page")); err == nil && n > 0 {
		p.perPage = min(n, maxPerPage)
	}
	if n, err := strconv.Atoi(q.Get("page")); err == nil && n > 0 {
		p.number = n
	}
	p.last = max(1, (total+p.perPage-1)/p.perPage)
	return p
}

// bounds are the indexes of the page's items in a list of total.
func (p page) bounds(total int) (from, to int) {
	from = min((p.number-1)*p.perPage, total)
	to = min(from+p.perPage, total)
	return from, to
}

// linkHeader builds GitHub's Link header (next, last, first, prev; only the
// relations that apply), absolute URLs keeping the other query parameters.
func (p page) linkHeader(req *request) http.Header {
	if p.last <= 1 {
		return nil
	}
	link := func(n int, rel string) string {
		q := url.Values{}
		for k, v := range req.query {
			q[k] = v
		}
		q.Set("page", strconv.Itoa(n))
		q.Set("per_page", strconv.Itoa(p.perPage))
		path, _ := stripPrefix(req.http.URL.Path)
		return fmt.Sprintf("<%s%s?%s>; rel=%q", req.apiBase, path, q.Encode(), rel)
	}
	var rels []string
	if p.number < p.last {
		rels = append(rels, link(p.number+1, "next"), link(p.last, "last"))
	}
	if p.number > 1 {
		rels = append(rels, link(1, "first"), link(min(p.number-1, p.last), "prev"))
	}
	if len(rels) == 0 {
		return nil
	}
	return http.Header{"Link": {strings.Join(rels, ", ")}}
}
