package external

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"

	"github.com/cloudbase/garm-provider-common/execution/common"
)

// proxyVariables always reach the provider: it talks to its cloud through
// the same proxy runfleet does.
var proxyVariables = []string{"http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"}

// call is what one invocation's environment depends on.
type call struct {
	command common.ExecutionCommand
	// instance is the provider id, or the name when no id is known yet.
	instance   string
	poolID     string
	extraSpecs json.RawMessage
}

// environment builds a provider's whole environment: nothing of the host's
// but the proxy variables and names with a configured prefix (never one
// starting with GARM), then the protocol's own variables.
func (p *Provider) environment(c call) []string {
	var env []string
	for _, kv := range p.environ() {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" || strings.HasPrefix(strings.ToUpper(name), "GARM") {
			continue
		}
		if slices.Contains(proxyVariables, name) || p.passedThrough(name) {
			env = append(env, kv)
		}
	}
	v011 := p.settings.InterfaceVersion == common.Version011
	env = append(env,
		"GARM_COMMAND="+string(c.command),
		"GARM_CONTROLLER_ID="+p.controllerID,
		"GARM_PROVIDER_CONFIG_FILE="+p.settings.ConfigFile,
		"GARM_INTERFACE_VERSION="+p.settings.InterfaceVersion,
	)
	switch {
	case v011:
		env = append(env, "GARM_POOL_ID="+c.poolID)
	case c.command == common.CreateInstanceCommand, c.command == common.ListInstancesCommand:
		env = append(env, "GARM_POOL_ID="+c.poolID)
	}
	switch c.command {
	case common.DeleteInstanceCommand, common.GetInstanceCommand, common.StartInstanceCommand, common.StopInstanceCommand:
		env = append(env, "GARM_INSTANCE_ID="+c.instance)
	}
	if v011 {
		env = append(env, "GARM_POOL_EXTRASPECS="+encodeExtraSpecs(c.extraSpecs))
	}
	return env
}

func (p *Provider) passedThrough(name string) bool {
	for _, prefix := range p.settings.EnvironmentPassthrough {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}

// encodeExtraSpecs is the v0.1.1 GARM_POOL_EXTRASPECS value: the standard
// base64 of the extra specs JSON, which is `null` when a pool has none.
func encodeExtraSpecs(specs json.RawMessage) string {
	if len(specs) == 0 {
		specs = json.RawMessage("null")
	}
	return base64.StdEncoding.EncodeToString(specs)
}
