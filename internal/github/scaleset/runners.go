package scaleset

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
)

// Runner is a runner as the Actions service refers to it.
type Runner struct {
	ID         int64  `json:"id"`
	Name       string `json:"name"`
	ScaleSetID int64  `json:"runnerScaleSetId"`
}

// JITRunner is a runner registered through a scale set, with the encoded
// configuration its machine starts with (a secret: never log it).
type JITRunner struct {
	Runner           Runner
	EncodedJITConfig string
}

// DefaultWorkFolder is the runner's work folder when none is given.
const DefaultWorkFolder = "_work"

// GenerateJITConfig registers a just-in-time runner named name in the
// scale set. ErrRunnerExists means the name is taken;
// ErrScaleSetNotFound, the scale set is gone.
func (c *Client) GenerateJITConfig(ctx context.Context, scaleSetID int64, name, workFolder string) (*JITRunner, error) {
	if workFolder == "" {
		workFolder = DefaultWorkFolder
	}
	var ans struct {
		Runner           *Runner `json:"runner"`
		EncodedJITConfig string  `json:"encodedJITConfig"`
	}
	op := "generate JIT config for " + name
	if _, err := c.service(ctx, scaleSetsPath+"/"+itoa(scaleSetID)+"/generatejitconfig", call{
		op: op, res: resScaleSet, method: http.MethodPost,
		body: map[string]string{"name": name, "workFolder": workFolder},
		ok:   []int{http.StatusOK, http.StatusCreated}, out: &ans,
	}); err != nil {
		return nil, err
	}
	if ans.Runner == nil || ans.EncodedJITConfig == "" {
		return nil, &Error{Op: op, Kind: ErrBadResponse, Err: errors.New("the answer lacks the runner or its configuration")}
	}
	return &JITRunner{Runner: *ans.Runner, EncodedJITConfig: ans.EncodedJITConfig}, nil
}

// RunnerByID reads a runner; ErrRunnerNotFound when GitHub does not know it.
func (c *Client) RunnerByID(ctx context.Context, id int64) (*Runner, error) {
	var r Runner
	if _, err := c.service(ctx, agentsPath+"/"+itoa(id), call{
		op: "get runner " + itoa(id), res: resRunner, method: http.MethodGet, ok: []int{http.StatusOK}, out: &r,
	}); err != nil {
		return nil, err
	}
	return &r, nil
}

// RunnerByName finds a runner by name; ErrRunnerNotFound when none has it.
func (c *Client) RunnerByName(ctx context.Context, name string) (*Runner, error) {
	op := "get runner " + name
	var rs countedList[Runner]
	if _, err := c.service(ctx, agentsPath+"?agentName="+url.QueryEscape(name), call{
		op: op, res: resRunner, method: http.MethodGet, ok: []int{http.StatusOK}, out: &rs,
	}); err != nil {
		return nil, err
	}
	switch len(rs.Value) {
	case 0:
		return nil, &Error{Op: op, Kind: ErrRunnerNotFound}
	case 1:
		return &rs.Value[0], nil
	}
	return nil, &Error{Op: op, Kind: ErrBadResponse, Err: fmt.Errorf("%d runners share the name", len(rs.Value))}
}

// RemoveRunner deregisters a runner. ErrRunnerBusy (which also matches
// github.ErrRunnerBusy) means it is running a job: keep its machine.
// ErrRunnerNotFound means it is already gone, which is success.
func (c *Client) RemoveRunner(ctx context.Context, id int64) error {
	_, err := c.service(ctx, agentsPath+"/"+itoa(id), call{
		op: "remove runner " + itoa(id), res: resRunner, method: http.MethodDelete,
		ok: []int{http.StatusNoContent, http.StatusOK},
	})
	return err
}
