package external

import (
	"bytes"
	"cmp"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cloudbase/garm-provider-common/execution/common"
	"github.com/cloudbase/garm-provider-common/params"
	"github.com/runfleet/runfleet/providers/settings"
)

// DefaultTimeout bounds every call but CreateInstance when the pool sets no
// timeout.
const DefaultTimeout = 2 * time.Minute

// Settings configure one pool's external provider.
type Settings struct {
	// Executable is the provider binary's absolute path.
	Executable string
	// ConfigFile is the provider's own config file (GARM_PROVIDER_CONFIG_FILE),
	// absolute.
	ConfigFile string
	// InterfaceVersion is common.Version010 or common.Version011; v0.1.1
	// only adds environment variables.
	InterfaceVersion string
	// EnvironmentPassthrough are prefixes of host variable names handed to
	// the provider (e.g. "AWS_"); nothing else of the host's environment is,
	// except the proxy variables.
	EnvironmentPassthrough []string
	// Timeout bounds every call but CreateInstance, which the caller's
	// context bounds (the pool's bootstrap timeout).
	Timeout time.Duration

	// What the pool's machines are, sent in every BootstrapInstance.
	OSType     params.OSType
	Arch       params.OSArch
	Flavor     string
	Image      string
	ExtraSpecs json.RawMessage
	// Tools are runner downloads offered to the machine. GARM providers that
	// install the runner themselves pick one matching OSType and Arch.
	Tools []params.RunnerApplicationDownload
}

// Setting keys (pools[].provider.settings), in the order errors list them.
const (
	keyExecutable  = "provider_executable"
	keyConfigFile  = "config_file"
	keyVersion     = "interface_version"
	keyPassthrough = "environment_passthrough"
	keyTimeout     = "timeout"
	keyOSType      = "os_type"
	keyArch        = "arch"
	keyFlavor      = "flavor"
	keyImage       = "image"
	keyExtraSpecs  = "extra_specs"
	keyTools       = "tools"
)

var settingKeys = []string{
	keyExecutable, keyConfigFile, keyVersion, keyPassthrough, keyTimeout,
	keyOSType, keyArch, keyFlavor, keyImage, keyExtraSpecs, keyTools,
}

var (
	osTypes = []params.OSType{params.Linux, params.Windows, params.Unknown}
	arches  = []params.OSArch{params.Amd64, params.I386, params.Arm64, params.Arm}
)

// ParseSettings reads and checks a pool's provider settings:
//
//	provider_executable      absolute path of an executable file (required)
//	config_file              existing file, the provider's config (required)
//	interface_version        v0.1.0 (default) or v0.1.1
//	environment_passthrough  list of host variable name prefixes, e.g. [AWS_]
//	timeout                  duration bounding non-create calls (default 2m)
//	os_type                  linux (default), windows or unknown
//	arch                     amd64 (default), i386, arm64 or arm
//	flavor, image            strings, the provider's own terms
//	extra_specs              an object (or a JSON object as a string)
//	tools                    list of {os, architecture, download_url,
//	                         filename, temp_download_token, sha256_checksum}
//
// A null value is as if the key were absent. Unknown keys are errors, every
// error names its key, and all of them are reported at once (errors.Join).
func ParseSettings(values map[string]any) (Settings, error) {
	r := settingsReader{settings.NewReader(values, settingKeys...)}
	s := Settings{
		Executable:             r.executable(keyExecutable),
		ConfigFile:             r.configFile(keyConfigFile),
		InterfaceVersion:       r.version(keyVersion),
		EnvironmentPassthrough: r.prefixes(keyPassthrough),
		Timeout:                cmp.Or(r.PositiveDuration(keyTimeout), DefaultTimeout),
		OSType:                 params.OSType(r.oneOf(keyOSType, string(params.Linux), names(osTypes))),
		Arch:                   params.OSArch(r.oneOf(keyArch, string(params.Amd64), names(arches))),
		Flavor:                 r.String(keyFlavor),
		Image:                  r.String(keyImage),
		ExtraSpecs:             r.extraSpecs(keyExtraSpecs),
		Tools:                  r.tools(keyTools),
	}
	if err := r.Err(); err != nil {
		return Settings{}, err
	}
	return s, nil
}

// settingsReader is the shared reader plus the checks only external
// providers need.
type settingsReader struct{ *settings.Reader }

func (r *settingsReader) executable(key string) string {
	path := r.String(key)
	switch {
	case r.Failed(key):
		return ""
	case path == "":
		r.Fail(key, "required: the absolute path of the GARM provider binary")
		return ""
	case !filepath.IsAbs(path):
		r.Fail(key, "%q: must be an absolute path", path)
		return ""
	}
	info, err := os.Stat(path)
	switch {
	case err != nil:
		r.Fail(key, "%v", err)
	case !info.Mode().IsRegular():
		r.Fail(key, "%q: not a regular file", path)
	case info.Mode().Perm()&0o111 == 0:
		r.Fail(key, "%q: not executable (mode %s)", path, info.Mode().Perm())
	}
	return path
}

func (r *settingsReader) configFile(key string) string {
	path := r.String(key)
	if r.Failed(key) {
		return ""
	}
	if path == "" {
		r.Fail(key, "required: the provider's own config file (GARM providers refuse to run without one)")
		return ""
	}
	// The provider runs with its own view of the working directory; an
	// absolute path means the same file to both.
	abs, err := filepath.Abs(path)
	if err != nil {
		r.Fail(key, "%v", err)
		return ""
	}
	info, err := os.Stat(abs)
	switch {
	case err != nil:
		r.Fail(key, "%v", err)
	case info.IsDir():
		r.Fail(key, "%q: is a directory", path)
	}
	return abs
}

func (r *settingsReader) version(key string) string {
	given := r.String(key)
	if given == "" {
		return common.Version010
	}
	v := given
	if !strings.HasPrefix(v, "v") {
		v = "v" + v // GARM's own config accepts "0.1.1"
	}
	if v != common.Version010 && v != common.Version011 {
		r.Fail(key, "%q: want %s or %s", given, common.Version010, common.Version011)
	}
	return v
}

func (r *settingsReader) prefixes(key string) []string {
	list := r.Strings(key)
	for _, p := range list {
		switch {
		case p == "" || strings.ContainsAny(p, "= \t\n"):
			r.Fail(key, "%q: not a variable name prefix", p)
		case strings.HasPrefix(strings.ToUpper(p), "GARM"):
			// runfleet sets the GARM_ variables itself; a host's must never
			// reach the provider and change what it does.
			r.Fail(key, "%q: variables starting with GARM are never passed through", p)
		}
	}
	return list
}

func names[T ~string](allowed []T) []string {
	out := make([]string, len(allowed))
	for i, a := range allowed {
		out[i] = string(a)
	}
	return out
}

func (r *settingsReader) oneOf(key, def string, names []string) string {
	v := r.String(key)
	if v == "" {
		return def
	}
	if !slices.Contains(names, v) {
		r.Fail(key, "%q: want one of %s", v, strings.Join(names, ", "))
	}
	return v
}

func (r *settingsReader) extraSpecs(key string) json.RawMessage {
	raw := r.JSON(key)
	if raw == nil {
		return nil
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		raw = json.RawMessage(text) // a JSON object given as a string
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		r.Fail(key, "want an object (a map, or a JSON object as a string)")
		return nil
	}
	if len(obj) == 0 {
		return nil
	}
	return json.RawMessage(raw)
}

func (r *settingsReader) tools(key string) []params.RunnerApplicationDownload {
	raw := r.JSON(key)
	if raw == nil {
		return nil
	}
	var tools []params.RunnerApplicationDownload
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&tools); err != nil {
		r.Fail(key, "want a list of {os, architecture, download_url, filename, sha256_checksum}: %v", err)
		return nil
	}
	for i, t := range tools {
		if t.GetOS() == "" || t.GetArchitecture() == "" || t.GetDownloadURL() == "" {
			r.Fail(key, "[%d]: os, architecture and download_url are required", i)
			return nil
		}
	}
	return tools
}
