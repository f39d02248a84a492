package external

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cloudbase/garm-provider-common/execution/common"
	"github.com/cloudbase/garm-provider-common/params"
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
// Unknown keys are errors, and every error names its key.
func ParseSettings(settings map[string]any) (Settings, error) {
	var unknown []string
	for k := range settings {
		if !slices.Contains(settingKeys, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return Settings{}, fmt.Errorf("unknown setting %s (known: %s)", strings.Join(unknown, ", "), strings.Join(settingKeys, ", "))
	}
	r := settingsReader{m: settings}
	s := Settings{
		Executable:             r.executable(keyExecutable),
		ConfigFile:             r.configFile(keyConfigFile),
		InterfaceVersion:       r.version(keyVersion),
		EnvironmentPassthrough: r.prefixes(keyPassthrough),
		Timeout:                r.duration(keyTimeout, DefaultTimeout),
		OSType:                 params.OSType(r.oneOf(keyOSType, string(params.Linux), names(osTypes))),
		Arch:                   params.OSArch(r.oneOf(keyArch, string(params.Amd64), names(arches))),
		Flavor:                 r.string(keyFlavor),
		Image:                  r.string(keyImage),
		ExtraSpecs:             r.extraSpecs(keyExtraSpecs),
		Tools:                  r.tools(keyTools),
	}
	if r.err != nil {
		return Settings{}, r.err
	}
	return s, nil
}

// settingsReader converts loosely typed YAML or JSON values, keeping the
// first error.
type settingsReader struct {
	m   map[string]any
	err error
}

func (r *settingsReader) fail(key, format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...))
	}
}

func (r *settingsReader) string(key string) string {
	v, ok := r.m[key]
	if !ok || v == nil {
		return ""
	}
	s, isString := v.(string)
	if !isString {
		r.fail(key, "want a string, got %v", v)
	}
	return s
}

func (r *settingsReader) executable(key string) string {
	path := r.string(key)
	switch {
	case r.err != nil:
		return ""
	case path == "":
		r.fail(key, "required: the absolute path of the GARM provider binary")
		return ""
	case !filepath.IsAbs(path):
		r.fail(key, "%q: must be an absolute path", path)
		return ""
	}
	info, err := os.Stat(path)
	switch {
	case err != nil:
		r.fail(key, "%v", err)
	case !info.Mode().IsRegular():
		r.fail(key, "%q: not a regular file", path)
	case info.Mode().Perm()&0o111 == 0:
		r.fail(key, "%q: not executable (mode %s)", path, info.Mode().Perm())
	}
	return path
}

func (r *settingsReader) configFile(key string) string {
	path := r.string(key)
	if r.err != nil {
		return ""
	}
	if path == "" {
		r.fail(key, "required: the provider's own config file (GARM providers refuse to run without one)")
		return ""
	}
	// The provider runs with its own view of the working directory; an
	// absolute path means the same file to both.
	abs, err := filepath.Abs(path)
	if err != nil {
		r.fail(key, "%v", err)
		return ""
	}
	info, err := os.Stat(abs)
	switch {
	case err != nil:
		r.fail(key, "%v", err)
	case info.IsDir():
		r.fail(key, "%q: is a directory", path)
	}
	return abs
}

func (r *settingsReader) version(key string) string {
	v := r.string(key)
	if v == "" {
		return common.Version010
	}
	if !strings.HasPrefix(v, "v") {
		v = "v" + v // GARM's own config accepts "0.1.1"
	}
	if v != common.Version010 && v != common.Version011 {
		r.fail(key, "%q: want %s or %s", r.m[key], common.Version010, common.Version011)
	}
	return v
}

func (r *settingsReader) prefixes(key string) []string {
	v, ok := r.m[key]
	if !ok || v == nil {
		return nil
	}
	var list []string
	switch l := v.(type) {
	case []string:
		list = l
	case []any:
		for _, item := range l {
			s, isString := item.(string)
			if !isString {
				r.fail(key, "want a list of variable name prefixes, got %v", item)
				return nil
			}
			list = append(list, s)
		}
	default:
		r.fail(key, "want a list of variable name prefixes such as [AWS_], got %v", v)
		return nil
	}
	for _, p := range list {
		switch {
		case p == "" || strings.ContainsAny(p, "= \t\n"):
			r.fail(key, "%q: not a variable name prefix", p)
		case strings.HasPrefix(strings.ToUpper(p), "GARM"):
			// runfleet sets the GARM_ variables itself; a host's must never
			// reach the provider and change what it does.
			r.fail(key, "%q: variables starting with GARM are never passed through", p)
		}
	}
	return list
}

func (r *settingsReader) duration(key string, def time.Duration) time.Duration {
	v, ok := r.m[key]
	if !ok || v == nil {
		return def
	}
	s, isString := v.(string)
	if !isString {
		r.fail(key, "want a duration such as \"2m\", got %v", v)
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		r.fail(key, "want a positive duration such as \"2m\", got %q", s)
		return 0
	}
	return d
}

func names[T ~string](allowed []T) []string {
	out := make([]string, len(allowed))
	for i, a := range allowed {
		out[i] = string(a)
	}
	return out
}

func (r *settingsReader) oneOf(key, def string, names []string) string {
	v := r.string(key)
	if v == "" {
		return def
	}
	if !slices.Contains(names, v) {
		r.fail(key, "%q: want one of %s", v, strings.Join(names, ", "))
	}
	return v
}

func (r *settingsReader) extraSpecs(key string) json.RawMessage {
	v, ok := r.m[key]
	if !ok || v == nil {
		return nil
	}
	var raw []byte
	if s, isString := v.(string); isString {
		raw = []byte(s)
	} else {
		var err error
		if raw, err = json.Marshal(v); err != nil {
			r.fail(key, "cannot be expressed as JSON: %v", err)
			return nil
		}
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		r.fail(key, "want an object (a map, or a JSON object as a string)")
		return nil
	}
	if len(obj) == 0 {
		return nil
	}
	return json.RawMessage(raw)
}

func (r *settingsReader) tools(key string) []params.RunnerApplicationDownload {
	v, ok := r.m[key]
	if !ok || v == nil {
		return nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		r.fail(key, "cannot be expressed as JSON: %v", err)
		return nil
	}
	var tools []params.RunnerApplicationDownload
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&tools); err != nil {
		r.fail(key, "want a list of {os, architecture, download_url, filename, sha256_checksum}: %v", err)
		return nil
	}
	for i, t := range tools {
		if t.GetOS() == "" || t.GetArchitecture() == "" || t.GetDownloadURL() == "" {
			r.fail(key, "[%d]: os, architecture and download_url are required", i)
			return nil
		}
	}
	return tools
}
