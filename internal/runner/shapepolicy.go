package runner

import (
	"fmt"
	"strings"
)

// ShapePolicy is what a pool lets a job ask for with shape labels: a
// budget, not a menu. Without one (Pool.Shapes nil) a pool refuses every
// shape label, so a workflow author can never pick a machine the operator
// did not allow (the p5.48xlarge a TF-runner user could request before its
// policy existed).
type ShapePolicy struct {
	// Families the pool may launch, cheapest first: when nothing else
	// separates two instance types, the earlier family wins.
	Families []string
	// MaxCPU and MaxMemoryGiB cap the machine, not only the request: no
	// instance type above either is launched for a shaped job.
	MaxCPU       int
	MaxMemoryGiB int
	// MaxDiskGiB caps the root volume a job may ask for; 0 refuses disk
	// requests.
	MaxDiskGiB int
	// Spot lets a job ask for spot (runfleet/spot=true); asking for
	// on-demand is always allowed.
	Spot bool
	// Images maps an alias a job may name (runfleet/image=<alias>) to an
	// AMI id or "resolve:ssm:<parameter>".
	Images map[string]string
}

// Refusal reasons: short, stable, lower-case — fit for a metric label.
const (
	RefusedMalformedLabel   = "malformed_label"
	RefusedShapesNotAllowed = "shapes_not_allowed"
	RefusedFamilyNotAllowed = "family_not_allowed"
	RefusedCPUOverLimit     = "cpu_over_limit"
	RefusedMemoryOverLimit  = "memory_over_limit"
	RefusedDiskOverLimit    = "disk_over_limit"
	RefusedSpotNotAllowed   = "spot_not_allowed"
	RefusedUnknownImage     = "unknown_image"
)

// RefusalReasons lists every reason, so an exporter can show each at 0.
var RefusalReasons = []string{
	RefusedMalformedLabel, RefusedShapesNotAllowed, RefusedFamilyNotAllowed, RefusedCPUOverLimit,
	RefusedMemoryOverLimit, RefusedDiskOverLimit, RefusedSpotNotAllowed, RefusedUnknownImage,
}

// ShapeRefusal is a job's shape request its pool does not grant. Reason
// is one of the Refused* constants; Detail says what was asked and what
// the policy allows, for the log line an operator or author reads.
type ShapeRefusal struct {
	Reason string
	Detail string
}

func (e *ShapeRefusal) Error() string {
	return "shape refused (" + e.Reason + "): " + e.Detail
}

// Allow returns nil when the policy grants req, otherwise a *ShapeRefusal
// naming the first thing it does not grant. A nil policy grants only the
// empty request.
func (p *ShapePolicy) Allow(req ShapeRequest) error {
	if req.Empty() {
		return nil
	}
	if p == nil {
		return &ShapeRefusal{Reason: RefusedShapesNotAllowed, Detail: "the pool has no shape policy (pools[].shapes); remove the runfleet/* labels or use a pool that allows shapes"}
	}
	for _, f := range req.Families {
		if !containsFold(p.Families, f) {
			return &ShapeRefusal{Reason: RefusedFamilyNotAllowed, Detail: fmt.Sprintf("family %q is not among the pool's %s", f, strings.Join(p.Families, ", "))}
		}
	}
	switch {
	case req.CPU > p.MaxCPU:
		return &ShapeRefusal{Reason: RefusedCPUOverLimit, Detail: fmt.Sprintf("asked for %d vCPUs; the pool allows at most %d", req.CPU, p.MaxCPU)}
	case req.MemoryGiB > p.MaxMemoryGiB:
		return &ShapeRefusal{Reason: RefusedMemoryOverLimit, Detail: fmt.Sprintf("asked for %d GiB of memory; the pool allows at most %d", req.MemoryGiB, p.MaxMemoryGiB)}
	case req.DiskGiB > p.MaxDiskGiB:
		return &ShapeRefusal{Reason: RefusedDiskOverLimit, Detail: fmt.Sprintf("asked for a %d GiB disk; the pool allows at most %d", req.DiskGiB, p.MaxDiskGiB)}
	case req.Spot != nil && *req.Spot && !p.Spot:
		return &ShapeRefusal{Reason: RefusedSpotNotAllowed, Detail: "asked for spot; the pool does not allow jobs to ask for it"}
	}
	if req.Image != "" {
		if _, ok := p.Images[req.Image]; !ok {
			return &ShapeRefusal{Reason: RefusedUnknownImage, Detail: fmt.Sprintf("image alias %q is not among the pool's images", req.Image)}
		}
	}
	return nil
}

// Machine is a granted shape request in the terms a provider launches:
// limits and families resolved against the policy, the image alias
// resolved to the image.
type Machine struct {
	MinCPU       int
	MinMemoryGiB int
	MaxCPU       int
	MaxMemoryGiB int
	// Families are the families to choose from, cheapest first: the job's
	// own, in the policy's order, or all of the policy's.
	Families []string
	DiskGiB  int
	// Market is "" (the pool's own choice), MarketSpot or MarketOnDemand.
	Market string
	// Image is an AMI id or "resolve:ssm:<parameter>"; "" = the pool's.
	Image string
}

// Markets a Machine may ask for.
const (
	MarketSpot     = "spot"
	MarketOnDemand = "on-demand"
)

// Grant checks req against the policy (Allow) and resolves it. The empty
// request is granted as nil: the pool's own machine.
func (p *ShapePolicy) Grant(req ShapeRequest) (*Machine, error) {
	if err := p.Allow(req); err != nil {
		return nil, err
	}
	if req.Empty() {
		return nil, nil
	}
	m := &Machine{
		MinCPU:       req.CPU,
		MinMemoryGiB: req.MemoryGiB,
		MaxCPU:       p.MaxCPU,
		MaxMemoryGiB: p.MaxMemoryGiB,
		DiskGiB:      req.DiskGiB,
		Image:        p.Images[req.Image],
	}
	for _, f := range p.Families {
		if len(req.Families) == 0 || containsFold(req.Families, f) {
			m.Families = append(m.Families, f)
		}
	}
	if req.Spot != nil {
		m.Market = MarketOnDemand
		if *req.Spot {
			m.Market = MarketSpot
		}
	}
	return m, nil
}

// GrantShape parses the shape labels among a job's labels and grants them
// under the pool's policy: nil for a job without shape labels, a
// *ShapeRefusal for one the pool does not serve as asked.
func (p *Pool) GrantShape(jobLabels []string) (*Machine, error) {
	req, err := ParseShape(jobLabels)
	if err != nil {
		return nil, err
	}
	return p.Shapes.Grant(req)
}
