package runner

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// ShapeLabelPrefix starts every job label that asks for a machine shape
// ("runfleet/cpu=4"). Such labels never decide the pool (Pool.Matches
// ignores them): the pool's ShapePolicy decides whether they are granted.
const ShapeLabelPrefix = "runfleet/"

// Shape label keys (after the prefix, before "=").
const (
	ShapeKeyCPU    = "cpu"
	ShapeKeyMemory = "memory"
	ShapeKeyFamily = "family"
	ShapeKeyDisk   = "disk"
	ShapeKeySpot   = "spot"
	ShapeKeyImage  = "image"
)

// Bounds on what a label may name at all, before any policy: larger
// numbers are typos or probes, never a machine EC2 sells.
const (
	maxShapeCPU       = 1024
	maxShapeMemoryGiB = 32768
	maxShapeDiskGiB   = 16384
	maxShapeFamilies  = 16
)

var (
	// familyPattern: EC2 family names such as m7g, c7gn, m7i-flex, u-6tb1.
	familyPattern = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	// imageAliasPattern: an operator's name for an image.
	imageAliasPattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9._-]{0,62}[a-z0-9])?$`)
)

// IsShapeLabel reports whether a job label asks for a machine shape.
func IsShapeLabel(label string) bool {
	return len(label) >= len(ShapeLabelPrefix) && strings.EqualFold(label[:len(ShapeLabelPrefix)], ShapeLabelPrefix)
}

// ShapeLabels returns the shape labels among labels, as written.
func ShapeLabels(labels []string) []string {
	var out []string
	for _, l := range labels {
		if IsShapeLabel(l) {
			out = append(out, l)
		}
	}
	return out
}

// SameShape reports whether two label sets ask for the same shape: the
// same shape labels, compared as GitHub compares labels
// (case-insensitively, in any order). A runner whose shape labels are not
// exactly a job's may not be able to take it, or is a machine the job did
// not ask for.
func SameShape(a, b []string) bool {
	return shapeKey(a) == shapeKey(b)
}

func shapeKey(labels []string) string {
	set := map[string]bool{}
	for _, l := range ShapeLabels(labels) {
		set[strings.ToLower(l)] = true
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return strings.Join(keys, "\x00")
}

// ShapeRequest is the machine a job asks for through its shape labels.
// Zero fields ask for nothing: the pool's defaults apply.
type ShapeRequest struct {
	CPU       int // minimum vCPUs
	MemoryGiB int // minimum memory
	DiskGiB   int // root volume size
	// Families narrows the instance families, in the job's order.
	Families []string
	// Spot is nil when the job does not say; false asks for on-demand.
	Spot *bool
	// Image is an image alias the pool's policy names.
	Image string
}

// Empty reports whether the job asks for no shape at all.
func (r ShapeRequest) Empty() bool {
	return r.CPU == 0 && r.MemoryGiB == 0 && r.DiskGiB == 0 && len(r.Families) == 0 && r.Spot == nil && r.Image == ""
}

// ParseShape reads the shape labels among a job's labels; other labels are
// skipped. A shape label that cannot be read (unknown key, missing or bad
// value, a key given twice) is a *ShapeRefusal with reason
// RefusedMalformedLabel: a typo must not silently launch the default
// machine.
func ParseShape(labels []string) (ShapeRequest, error) {
	var req ShapeRequest
	seen := map[string]bool{}
	for _, label := range ShapeLabels(labels) {
		key, value, ok := strings.Cut(label[len(ShapeLabelPrefix):], "=")
		key = strings.ToLower(strings.TrimSpace(key))
		value = strings.TrimSpace(value)
		if !ok || value == "" {
			return ShapeRequest{}, malformed(label, "want "+ShapeLabelPrefix+"<key>=<value>")
		}
		if seen[key] {
			return ShapeRequest{}, malformed(label, fmt.Sprintf("%q is given twice", key))
		}
		seen[key] = true
		var err error
		switch key {
		case ShapeKeyCPU:
			req.CPU, err = shapeNumber(value, maxShapeCPU)
		case ShapeKeyMemory:
			req.MemoryGiB, err = shapeNumber(value, maxShapeMemoryGiB)
		case ShapeKeyDisk:
			req.DiskGiB, err = shapeNumber(value, maxShapeDiskGiB)
		case ShapeKeyFamily:
			req.Families, err = shapeFamilies(value)
		case ShapeKeySpot:
			var spot bool
			spot, err = strconv.ParseBool(strings.ToLower(value))
			if err != nil {
				err = fmt.Errorf("want true or false")
			}
			req.Spot = &spot
		case ShapeKeyImage:
			req.Image = strings.ToLower(value)
			if !imageAliasPattern.MatchString(req.Image) {
				err = fmt.Errorf("not an image alias")
			}
		default:
			err = fmt.Errorf("unknown key %q (known: cpu, memory, family, disk, spot, image)", key)
		}
		if err != nil {
			return ShapeRequest{}, malformed(label, err.Error())
		}
	}
	return req, nil
}

func shapeNumber(value string, limit int) (int, error) {
	n, err := strconv.Atoi(value)
	if err != nil || n < 1 || n > limit {
		return 0, fmt.Errorf("want a whole number from 1 to %d", limit)
	}
	return n, nil
}

func shapeFamilies(value string) ([]string, error) {
	parts := strings.Split(strings.ToLower(value), "|")
	if len(parts) > maxShapeFamilies {
		return nil, fmt.Errorf("at most %d families", maxShapeFamilies)
	}
	out := make([]string, 0, len(parts))
	for _, f := range parts {
		f = strings.TrimSpace(f)
		if !familyPattern.MatchString(f) {
			return nil, fmt.Errorf("%q is not an instance family (such as m7g)", f)
		}
		if !containsFold(out, f) {
			out = append(out, f)
		}
	}
	return out, nil
}

func malformed(label, why string) error {
	return &ShapeRefusal{Reason: RefusedMalformedLabel, Detail: fmt.Sprintf("label %q: %s", label, why)}
}

func containsFold(list []string, s string) bool {
	for _, have := range list {
		if strings.EqualFold(have, s) {
			return true
		}
	}
	return false
}

// ValidFamily reports whether s can name an instance family (m7g).
func ValidFamily(s string) bool { return familyPattern.MatchString(s) }

// ValidImageAlias reports whether s can be an image alias a job names.
func ValidImageAlias(s string) bool { return imageAliasPattern.MatchString(s) }
