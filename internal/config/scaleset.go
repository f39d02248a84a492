package config

import (
	"strings"
)

// ScaleSet feeds a pool from a GitHub runner scale set (docs/scale-sets.md):
// a listener long-polls the scale set for its jobs, so the pool needs no
// public webhook endpoint. The scale set is made in the pool's runner
// group, with the pool's labels, if it does not exist.
type ScaleSet struct {
	// Name is the scale set's name, what a workflow's runs-on names.
	Name string `yaml:"name"`
}

// maxScaleSetName bounds a scale set's name: it becomes a runner label,
// and GitHub's labels are short.
const maxScaleSetName = 100

func (s *ScaleSet) validate(p *problems, i int, pool *Pool) {
	if s == nil {
		return
	}
	field := poolField(i, "scale_set.name")
	switch {
	case s.Name == "":
		p.add(field, "required with scale_set")
	case strings.TrimSpace(s.Name) != s.Name || strings.ContainsAny(s.Name, ", \t\n"):
		p.add(field, "%q: must not contain whitespace or commas (it is a runner label)", s.Name)
	case len(s.Name) > maxScaleSetName:
		p.add(field, "%q: at most %d characters", s.Name, maxScaleSetName)
	}
	if pool.Shapes != nil {
		// A scale set's jobs name only the scale set: there is no label a
		// job could ask for a shape with.
		p.add(poolField(i, "shapes"), "a scale-set pool cannot have shapes")
	}
}

// checkScaleSetUnique refuses a second pool listening to the same scale
// set (same owner, runner group and name): two listeners would fight over
// its one message session.
func (c *Config) checkScaleSetUnique(p *problems, i int) {
	this := &c.Pools[i]
	if this.ScaleSet == nil || this.ScaleSet.Name == "" {
		return
	}
	for j := range i {
		other := &c.Pools[j]
		if other.ScaleSet != nil && strings.EqualFold(other.ScaleSet.Name, this.ScaleSet.Name) &&
			strings.EqualFold(other.Owner, this.Owner) && strings.EqualFold(other.RunnerGroup, this.RunnerGroup) {
			p.add(poolField(i, "scale_set.name"), "%q is already the scale set of pools[%d]", this.ScaleSet.Name, j)
			return
		}
	}
}
