package runner

import (
	"fmt"
	"strings"
)

// Why a job matched no pool, as runfleet_jobs_unmatched's reason label.
const (
	// UnmatchedOwner: no pool registers runners where the job runs (its
	// repository, organization or enterprise).
	UnmatchedOwner = "owner"
	// UnmatchedLabels: pools serve the job's owner, but none has all of
	// its labels.
	UnmatchedLabels = "labels"
)

// Mismatch is why no pool serves a job, worded for an operator.
type Mismatch struct {
	// Reason is UnmatchedOwner or UnmatchedLabels.
	Reason string
	// Detail says it in words: which labels no pool has, and the nearest
	// pool and what it lacks.
	Detail string
}

// Mismatch says why no pool serves a job with these labels in this
// repository, organization and enterprise, and whether the job is one
// runfleet should record at all: a job that asks for "self-hosted", or
// shares a label with a pool serving its owner, was meant for runfleet
// (a typo, a missing pool); any other — ubuntu-latest on GitHub's own
// runners — is not runfleet's and is only logged, as is the webhook about
// a job that names a scale-set pool's scale set (its listener holds it).
// Call it only for a job Match found no pool for.
func (ps Pools) Mismatch(repoFullName, orgLogin, enterpriseSlug string, jobLabels []string) (Mismatch, bool) {
	labels := nonShapeLabels(jobLabels)
	var nearest *Pool
	var lacks []string
	var serving Pools
	for i := range ps {
		p := &ps[i]
		if !p.ServesOwner(repoFullName, orgLogin, enterpriseSlug) {
			continue
		}
		if p.ScaleSet != "" {
			if p.namesScaleSet(labels) {
				// The scale set's job: its listener holds it, under its
				// runner request; the webhook about it is not news.
				return Mismatch{}, false
			}
			continue // never a webhook job's nearest pool
		}
		serving = append(serving, *p)
		missing := p.missingLabels(labels)
		if nearest == nil || len(missing) < len(lacks) {
			nearest, lacks = p, missing
		}
	}
	meant := hasSelfHosted(labels) || nearest != nil && len(lacks) < len(labels)
	if !meant {
		return Mismatch{}, false
	}
	if nearest == nil {
		return Mismatch{Reason: UnmatchedOwner, Detail: fmt.Sprintf(
			"no pool serves %s (check each pool's owner: repository, organization or enterprise)", ownerWords(repoFullName, orgLogin))}, true
	}
	if len(labels) == 0 {
		return Mismatch{Reason: UnmatchedLabels, Detail: "the job has no labels a pool could match"}, true
	}
	return Mismatch{Reason: UnmatchedLabels, Detail: fmt.Sprintf(
		"no pool has all of the labels %s: %s; the nearest pool, %s, lacks %s",
		strings.Join(labels, ", "), serving.noPoolHas(labels), nearest.Name, strings.Join(lacks, ", "))}, true
}

// namesScaleSet reports whether a job's labels name the pool's scale set,
// as a workflow's runs-on does.
func (p *Pool) namesScaleSet(labels []string) bool {
	for _, l := range labels {
		if strings.EqualFold(l, p.ScaleSet) {
			return true
		}
	}
	return false
}

// noPoolHas words the labels not one of the pools has.
func (ps Pools) noPoolHas(labels []string) string {
	var out []string
	for _, l := range labels {
		had := false
		for i := range ps {
			had = had || ps[i].hasLabel(l)
		}
		if !had {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		return "each is in some pool, never all in one"
	}
	return "no pool has " + strings.Join(out, ", ")
}

func (p *Pool) missingLabels(labels []string) []string {
	var out []string
	for _, l := range labels {
		if !p.hasLabel(l) {
			out = append(out, l)
		}
	}
	return out
}

func nonShapeLabels(labels []string) []string {
	var out []string
	for _, l := range labels {
		if !IsShapeLabel(l) {
			out = append(out, l)
		}
	}
	return out
}

func hasSelfHosted(labels []string) bool {
	for _, l := range labels {
		if strings.EqualFold(l, selfHosted) {
			return true
		}
	}
	return false
}

func ownerWords(repoFullName, orgLogin string) string {
	switch {
	case repoFullName != "":
		return "repository " + repoFullName
	case orgLogin != "":
		return "organization " + orgLogin
	}
	return "the job's owner"
}
