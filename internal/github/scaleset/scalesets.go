package scaleset

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Paths relative to the Actions service URL.
const (
	scaleSetsPath    = "_apis/runtime/runnerscalesets"
	runnerGroupsPath = "_apis/runtime/runnergroups/"
	agentsPath       = "_apis/distributedtask/pools/0/agents"
)

// DefaultRunnerGroup is the name of the group every owner has.
const DefaultRunnerGroup = "default"

// RunnerGroup is a runner group as the Actions service lists it.
type RunnerGroup struct {
	ID        int64  `json:"id"`
	Name      string `json:"name"`
	IsDefault bool   `json:"isDefaultGroup"`
}

// ScaleSet is a runner scale set as the Actions service describes it.
type ScaleSet struct {
	ID              int64
	Name            string
	RunnerGroupID   int64
	RunnerGroupName string
	// Labels are the label names; every label this client makes is of
	// type "System", as the service expects of scale sets.
	Labels    []string
	CreatedOn time.Time
	// Statistics, when the service sent them with the scale set.
	Statistics *Statistics
}

// ScaleSetSpec is what CreateScaleSet and UpdateScaleSet send.
type ScaleSetSpec struct {
	Name          string
	RunnerGroupID int64
	// Labels from the pool. The scale set's name is added when missing:
	// on github.com jobs are reported to target scale sets by name.
	Labels []string
	// DisableUpdate keeps runners from self-updating (an image pins the
	// runner version).
	DisableUpdate bool
}

type wireLabel struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

type wireScaleSet struct {
	ID              int64       `json:"id,omitempty"`
	Name            string      `json:"name"`
	RunnerGroupID   int64       `json:"runnerGroupId"`
	RunnerGroupName string      `json:"runnerGroupName,omitempty"`
	Labels          []wireLabel `json:"labels"`
	RunnerSetting   struct {
		DisableUpdate bool `json:"disableUpdate"`
	} `json:"RunnerSetting"`
	CreatedOn  Timestamp   `json:"createdOn,omitzero"`
	Statistics *Statistics `json:"statistics,omitempty"`
}

func (w *wireScaleSet) scaleSet() *ScaleSet {
	s := &ScaleSet{
		ID: w.ID, Name: w.Name, RunnerGroupID: w.RunnerGroupID, RunnerGroupName: w.RunnerGroupName,
		CreatedOn: w.CreatedOn.Time, Statistics: w.Statistics,
	}
	for _, l := range w.Labels {
		s.Labels = append(s.Labels, l.Name)
	}
	return s
}

func (spec ScaleSetSpec) wire() wireScaleSet {
	w := wireScaleSet{Name: spec.Name, RunnerGroupID: spec.RunnerGroupID}
	w.RunnerSetting.DisableUpdate = spec.DisableUpdate
	for _, l := range spec.labels() {
		w.Labels = append(w.Labels, wireLabel{Type: "System", Name: l})
	}
	return w
}

// labels are the spec's labels, the name first when it was missing.
func (spec ScaleSetSpec) labels() []string {
	if slices.Contains(spec.Labels, spec.Name) {
		return spec.Labels
	}
	return append([]string{spec.Name}, spec.Labels...)
}

// countedList is the service's list envelope.
type countedList[T any] struct {
	Count int `json:"count"`
	Value []T `json:"value"`
}

// RunnerGroupByName finds a runner group; "" means DefaultRunnerGroup.
func (c *Client) RunnerGroupByName(ctx context.Context, name string) (*RunnerGroup, error) {
	if name == "" {
		name = DefaultRunnerGroup
	}
	var groups countedList[RunnerGroup]
	if _, err := c.service(ctx, runnerGroupsPath+"?groupName="+url.QueryEscape(name), call{
		op: "get runner group " + name, method: http.MethodGet, ok: []int{http.StatusOK}, out: &groups,
	}); err != nil {
		return nil, err
	}
	for i := range groups.Value {
		// GitHub treats group names case-insensitively (its UI refuses
		// two groups differing only in case).
		if strings.EqualFold(groups.Value[i].Name, name) {
			return &groups.Value[i], nil
		}
	}
	return nil, &Error{Op: "get runner group " + name, Kind: ErrRunnerGroupNotFound,
		Message: fmt.Sprintf("no runner group named %q at %s: create it, or name an existing one", name, c.cfg.Owner)}
}

// ScaleSetByName finds a scale set in a runner group, or ErrScaleSetNotFound.
func (c *Client) ScaleSetByName(ctx context.Context, runnerGroupID int64, name string) (*ScaleSet, error) {
	op := "get scale set " + name
	var sets countedList[wireScaleSet]
	q := url.Values{"runnerGroupId": {itoa(runnerGroupID)}, "name": {name}}
	if _, err := c.service(ctx, scaleSetsPath+"?"+q.Encode(), call{
		op: op, res: resScaleSet, method: http.MethodGet, ok: []int{http.StatusOK}, out: &sets,
	}); err != nil {
		return nil, err
	}
	for i := range sets.Value {
		if sets.Value[i].Name == name {
			return sets.Value[i].scaleSet(), nil
		}
	}
	return nil, &Error{Op: op, Kind: ErrScaleSetNotFound}
}

// ScaleSetByID reads a scale set; ErrScaleSetNotFound when GitHub deleted it.
func (c *Client) ScaleSetByID(ctx context.Context, id int64) (*ScaleSet, error) {
	var w wireScaleSet
	if _, err := c.service(ctx, scaleSetsPath+"/"+itoa(id), call{
		op: "get scale set " + itoa(id), res: resScaleSet, method: http.MethodGet, ok: []int{http.StatusOK}, out: &w,
	}); err != nil {
		return nil, err
	}
	return w.scaleSet(), nil
}

// CreateScaleSet creates a scale set in spec's runner group.
func (c *Client) CreateScaleSet(ctx context.Context, spec ScaleSetSpec) (*ScaleSet, error) {
	var w wireScaleSet
	if _, err := c.service(ctx, scaleSetsPath, call{
		op: "create scale set " + spec.Name, method: http.MethodPost, body: spec.wire(),
		ok: []int{http.StatusOK, http.StatusCreated}, out: &w,
	}); err != nil {
		return nil, err
	}
	return w.scaleSet(), nil
}

// UpdateScaleSet replaces a scale set's name, group, labels and settings.
func (c *Client) UpdateScaleSet(ctx context.Context, id int64, spec ScaleSetSpec) (*ScaleSet, error) {
	var w wireScaleSet
	if _, err := c.service(ctx, scaleSetsPath+"/"+itoa(id), call{
		op: "update scale set " + itoa(id), res: resScaleSet, method: http.MethodPatch, body: spec.wire(),
		ok: []int{http.StatusOK}, out: &w,
	}); err != nil {
		return nil, err
	}
	return w.scaleSet(), nil
}

// DeleteScaleSet deletes a scale set. One already gone is ErrScaleSetNotFound.
func (c *Client) DeleteScaleSet(ctx context.Context, id int64) error {
	_, err := c.service(ctx, scaleSetsPath+"/"+itoa(id), call{
		op: "delete scale set " + itoa(id), res: resScaleSet, method: http.MethodDelete,
		ok: []int{http.StatusNoContent, http.StatusOK},
	})
	return err
}

// EnsureScaleSet returns the scale set named spec.Name in the runner group
// named group, creating it when missing and updating its labels when they
// differ from the spec's. A listener calls it before every new session:
// GitHub deletes idle scale sets. spec.RunnerGroupID is filled in here.
func (c *Client) EnsureScaleSet(ctx context.Context, group string, spec ScaleSetSpec) (*ScaleSet, error) {
	g, err := c.RunnerGroupByName(ctx, group)
	if err != nil {
		return nil, err
	}
	spec.RunnerGroupID = g.ID
	s, err := c.ScaleSetByName(ctx, g.ID, spec.Name)
	switch {
	case errors.Is(err, ErrScaleSetNotFound):
		c.log.InfoContext(ctx, "scaleset: creating the scale set", "scale_set", spec.Name, "runner_group", g.Name)
		return c.CreateScaleSet(ctx, spec)
	case err != nil:
		return nil, err
	case sameLabels(s.Labels, spec.labels()):
		return s, nil
	}
	c.log.InfoContext(ctx, "scaleset: updating the scale set's labels", "scale_set", spec.Name, "had", s.Labels, "want", spec.labels())
	return c.UpdateScaleSet(ctx, s.ID, spec)
}

func sameLabels(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
