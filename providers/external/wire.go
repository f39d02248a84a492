package external

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cloudbase/garm-provider-common/params"
	"github.com/runfleet/runfleet/providers"
)

// bootstrap is the CreateInstance stdin for req: GARM's BootstrapInstance,
// with what the pool's settings say about its machines where req is silent.
func (p *Provider) bootstrap(req providers.CreateRequest, poolID string) params.BootstrapInstance {
	b := params.BootstrapInstance{
		Name:              req.Name,
		Tools:             p.tools(req),
		RepoURL:           req.RepoURL,
		CallbackURL:       req.CallbackURL,
		MetadataURL:       req.MetadataURL,
		InstanceToken:     req.InstanceToken,
		ExtraSpecs:        p.extraSpecs(req),
		GitHubRunnerGroup: req.RunnerGroup,
		OSArch:            params.OSArch(or(req.Arch, string(p.settings.Arch))),
		OSType:            params.OSType(or(req.OSType, string(p.settings.OSType))),
		Flavor:            or(req.Flavor, p.settings.Flavor),
		Image:             or(req.Image, p.settings.Image),
		Labels:            req.Labels,
		PoolID:            poolID,
		// runfleet only ever hands machines JIT configs through the metadata
		// endpoint, never registration tokens.
		JitConfigEnabled: true,
	}
	return b
}

// tools are the runner downloads offered to the machine: the pool's
// `tools` setting when it has one (an operator pinning a runner build or a
// mirror), else what GitHub listed for the owner. Never nil: GARM sends a
// list.
func (p *Provider) tools(req providers.CreateRequest) []params.RunnerApplicationDownload {
	if p.settings.Tools != nil {
		return p.settings.Tools
	}
	out := make([]params.RunnerApplicationDownload, 0, len(req.RunnerDownloads))
	for _, t := range req.RunnerDownloads {
		out = append(out, params.RunnerApplicationDownload{
			OS:                optional(t.OS),
			Architecture:      optional(t.Architecture),
			DownloadURL:       optional(t.DownloadURL),
			Filename:          optional(t.Filename),
			SHA256Checksum:    optional(t.SHA256Checksum),
			TempDownloadToken: optional(t.TempDownloadToken),
		})
	}
	return out
}

// optional is nil for "": the field is then left out of the JSON, as
// GitHub leaves out what it does not send.
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (p *Provider) extraSpecs(req providers.CreateRequest) json.RawMessage {
	if len(req.ExtraSpecs) > 0 {
		return req.ExtraSpecs
	}
	return p.settings.ExtraSpecs
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// validStatuses are the machine statuses a provider may report.
var validStatuses = []params.InstanceStatus{
	params.InstanceRunning, params.InstanceError, params.InstanceStopped, params.InstanceStatusUnknown,
}

// decodeInstance reads a CreateInstance or GetInstance answer. On invalid
// output the error wraps ErrInvalidOutput; whatever could be decoded is
// still returned, so a caller can clean up a machine whose id it learnt.
func decodeInstance(stdout []byte) (providers.Instance, error) {
	if len(bytes.TrimSpace(stdout)) == 0 {
		return providers.Instance{}, invalidOutput(stdout, "empty output, want one instance as JSON")
	}
	var pi params.ProviderInstance
	if err := json.Unmarshal(stdout, &pi); err != nil {
		// provider_fault holds bytes, so a plain-text fault fails here, as
		// it does in GARM.
		return providers.Instance{}, invalidOutput(stdout, "not an instance: %v", err)
	}
	in := toInstance(pi)
	if problem := checkInstance(pi); problem != "" {
		return in, invalidOutput(stdout, "%s", problem)
	}
	return in, nil
}

// decodeInstances reads a ListInstances answer: a JSON array, where `null`
// means none and empty output is an error.
func decodeInstances(stdout []byte) ([]providers.Instance, error) {
	if len(bytes.TrimSpace(stdout)) == 0 {
		return nil, invalidOutput(stdout, "empty output, want a JSON array (or null when there are no instances)")
	}
	var list []params.ProviderInstance
	if err := json.Unmarshal(stdout, &list); err != nil {
		return nil, invalidOutput(stdout, "not a list of instances: %v", err)
	}
	out := make([]providers.Instance, 0, len(list))
	for i, pi := range list {
		if problem := checkInstance(pi); problem != "" {
			return nil, invalidOutput(stdout, "instance [%d]: %s", i, problem)
		}
		out = append(out, toInstance(pi))
	}
	return out, nil
}

// checkInstance names what makes pi unusable, or returns "".
func checkInstance(pi params.ProviderInstance) string {
	var problems []string
	if pi.ProviderID == "" {
		problems = append(problems, "provider_id is empty")
	}
	if pi.Name == "" {
		problems = append(problems, "name is empty")
	}
	if !slices.Contains(validStatuses, pi.Status) {
		problems = append(problems, fmt.Sprintf("status %q is not one of running, error, stopped, unknown", pi.Status))
	}
	return strings.Join(problems, "; ")
}

func toInstance(pi params.ProviderInstance) providers.Instance {
	in := providers.Instance{
		ProviderID: pi.ProviderID,
		Name:       pi.Name,
		Status:     providers.MachineStatus(pi.Status),
		OSType:     string(pi.OSType),
		OSName:     pi.OSName,
		OSVersion:  pi.OSVersion,
		OSArch:     string(pi.OSArch),
		Fault:      string(pi.ProviderFault),
	}
	for _, a := range pi.Addresses {
		in.Addresses = append(in.Addresses, providers.Address{Address: a.Address, Type: string(a.Type)})
	}
	return in
}

// invalidOutput describes output that breaks the protocol, quoting the
// start of it; it becomes the fault an operator reads.
func invalidOutput(stdout []byte, format string, args ...any) error {
	msg := "invalid output: " + fmt.Sprintf(format, args...)
	if out := firstBytes(strings.TrimSpace(string(stdout)), 512); out != "" {
		msg += "; output: " + out
	}
	return errors.New(msg)
}
