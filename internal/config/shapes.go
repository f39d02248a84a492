package config

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/runfleet/runfleet/internal/runner"
)

// Shapes is a pool's shape policy (pools[].shapes): what its jobs may ask
// for with runfleet/… labels. Every limit is required, so a pool that
// allows shapes always says how large a machine may get.
type Shapes struct {
	// Families the pool may launch, cheapest first (ties between instance
	// types of equal size go to the earlier family).
	Families []string `yaml:"families"`
	// MaxCPU and MaxMemory (GiB) cap every shaped machine.
	MaxCPU    int `yaml:"max_cpu"`
	MaxMemory int `yaml:"max_memory"`
	// MaxDisk caps the root volume a job may ask for (GiB); 0 = none.
	MaxDisk int `yaml:"max_disk"`
	// Spot lets a job ask for spot (runfleet/spot=true).
	Spot bool `yaml:"spot"`
	// Images a job may name (runfleet/image=<alias>): alias → AMI id or
	// "resolve:ssm:<parameter>".
	Images map[string]string `yaml:"images"`
}

// shapeProviderTypes are the provider types that launch a machine by
// shape: GARM's external providers take one flavor per pool, and a shape
// they ignored would launch a machine the job did not ask for. The
// kubernetes provider turns a shape into the runner pod's resource
// requests; it has no instance families to choose from.
var shapeProviderTypes = []string{"ec2", "simulated", "kubernetes"}

// shapeImagePattern is what EC2 accepts as an image: an AMI id, or an SSM
// parameter EC2 resolves at launch.
var shapeImagePattern = regexp.MustCompile(`^(ami-[0-9a-f]+|resolve:ssm:\S+)$`)

// Limits of what a policy may allow, matching what a label may ask.
const (
	maxPolicyCPU       = 1024
	maxPolicyMemoryGiB = 32768
	maxPolicyDiskGiB   = 16384
)

func (s *Shapes) validate(p *problems, i int, providerType string) {
	if s == nil {
		return
	}
	field := func(name string) string { return poolField(i, "shapes."+name) }
	if knownProviderType(providerType) && !slices.Contains(shapeProviderTypes, providerType) {
		p.add(poolField(i, "shapes"), "the %s provider cannot launch machines by shape (only %s)", providerType, strings.Join(shapeProviderTypes, ", "))
	}
	if len(s.Families) == 0 && providerType != "kubernetes" {
		p.add(field("families"), "required: the instance families jobs may ask for, cheapest first (e.g. [c7g, m7g])")
	}
	for j, f := range s.Families {
		switch {
		case !runner.ValidFamily(f):
			p.add(fmt.Sprintf("%s[%d]", field("families"), j), "%q: must be a lower-case instance family such as m7g", f)
		case slices.Index(s.Families, f) < j:
			p.add(fmt.Sprintf("%s[%d]", field("families"), j), "%q is listed twice", f)
		}
	}
	if s.MaxCPU < 1 || s.MaxCPU > maxPolicyCPU {
		p.add(field("max_cpu"), "must be from 1 to %d (vCPUs)", maxPolicyCPU)
	}
	if s.MaxMemory < 1 || s.MaxMemory > maxPolicyMemoryGiB {
		p.add(field("max_memory"), "must be from 1 to %d (GiB)", maxPolicyMemoryGiB)
	}
	if s.MaxDisk < 0 || s.MaxDisk > maxPolicyDiskGiB {
		p.add(field("max_disk"), "must be from 0 to %d (GiB; 0 = jobs may not ask for a disk size)", maxPolicyDiskGiB)
	}
	aliases := make([]string, 0, len(s.Images))
	for alias := range s.Images {
		aliases = append(aliases, alias)
	}
	slices.Sort(aliases) // one report order for one file
	for _, alias := range aliases {
		image := s.Images[alias]
		switch {
		case !runner.ValidImageAlias(alias):
			p.add(field("images."+alias), "%q: an alias must be 1–64 lower-case letters, digits, '.', '_' or '-'", alias)
		case !shapeImagePattern.MatchString(strings.TrimSpace(image)) || strings.TrimSpace(image) != image:
			p.add(field("images."+alias), `%q: must be an AMI id (ami-…) or "resolve:ssm:<parameter>"`, image)
		}
	}
}
