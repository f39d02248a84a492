package metadata

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/runner"
)

// DefaultRunUser is the account the runner runs as when the unit-file
// request names none; GARM's cloud-init creates and uses it.
const DefaultRunUser = "runner"

// runUserPattern is a portable Linux user name. It is checked because the
// name is written into a systemd unit: anything looser could inject
// directives.
var runUserPattern = regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,31}$`)

// maxServiceName keeps the unit name well inside systemd's limit (255).
const maxServiceName = 120

// serviceName is the runner's systemd service name, without ".service"
// (GARM's scripts append it): actions.runner.<scope>.<instance>, the naming
// the runner's own svc.sh uses, where scope is the organization, the
// enterprise, or "<org>-<repo>". Characters systemd would escape are
// replaced by '-'.
func serviceName(inst *runner.Instance) string {
	o := inst.Owner
	scope := o.Org
	switch {
	case o.Enterprise != "":
		scope = o.Enterprise
	case o.Repo != "":
		scope = o.Org + "-" + o.Repo
	}
	name := "actions.runner." + unitSafe(scope) + "." + unitSafe(inst.Name)
	if len(name) > maxServiceName {
		name = name[:maxServiceName]
	}
	return name
}

func unitSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '-'
	}, s)
}

func (h *Handler) serviceName(w http.ResponseWriter, _ *http.Request, req *request) {
	writeText(w, "text/plain; charset=utf-8", []byte(serviceName(req.instance)))
}

// unitFile is a systemd unit that runs the runner's runsvc.sh as user from
// /home/<user>/actions-runner, where GARM's scripts (and runfleet's install
// script) unpack and configure the runner.
func unitFile(inst *runner.Instance, user string) string {
	home := "/home/" + user + "/actions-runner"
	return fmt.Sprintf(`[Unit]
Description=GitHub Actions runner %[1]s (runfleet)
Wants=network-online.target
After=network-online.target

[Service]
Type=simple
User=%[2]s
WorkingDirectory=%[3]s
ExecStart=%[3]s/runsvc.sh
# The runner finishes its job on SIGTERM before exiting.
KillMode=process
KillSignal=SIGTERM
TimeoutStopSec=5min

[Install]
WantedBy=multi-user.target
`, unitSafe(inst.Name), user, home)
}

func (h *Handler) unitFile(w http.ResponseWriter, r *http.Request, req *request) {
	user := r.URL.Query().Get("runAsUser")
	if user == "" {
		user = DefaultRunUser
	}
	if !runUserPattern.MatchString(user) {
		h.refuse(w, req.log, http.StatusBadRequest, fmt.Sprintf("runAsUser %q is not a valid user name", user))
		return
	}
	writeText(w, "text/plain; charset=utf-8", []byte(unitFile(req.instance, user)))
}

// certBundle is GARM's certificate bundle: certificate name -> PEM bytes
// (base64 in JSON, as []byte encodes).
type certBundle struct {
	RootCertificates map[string][]byte `json:"root_certificates"`
}

// parseCertBundle splits PEM text into its certificates, named by serial
// number; anything but CERTIFICATE blocks, or a block that does not parse,
// is an error at start rather than a broken machine later.
func parseCertBundle(data []byte) (certBundle, error) {
	bundle := certBundle{RootCertificates: map[string][]byte{}}
	rest := data
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return certBundle{}, fmt.Errorf("metadata: CA bundle holds a %q PEM block; only certificates belong there", block.Type)
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return certBundle{}, fmt.Errorf("metadata: CA bundle: %w", err)
		}
		bundle.RootCertificates[cert.SerialNumber.Text(16)] = pem.EncodeToMemory(block)
	}
	if len(bundle.RootCertificates) == 0 && strings.TrimSpace(string(data)) != "" {
		return certBundle{}, errors.New("metadata: CA bundle holds no PEM certificate")
	}
	return bundle, nil
}

func (h *Handler) certBundle(w http.ResponseWriter, _ *http.Request, _ *request) {
	writeJSON(w, http.StatusOK, h.certs)
}

// runnerMetadata is what a machine may want to know about the runner it
// is becoming; it holds no secret.
type runnerMetadata struct {
	Name             string   `json:"name"`
	Pool             string   `json:"pool"`
	Owner            string   `json:"owner"`
	Labels           []string `json:"labels"`
	CreateAttempt    int      `json:"create_attempt"`
	GitHubRunnerID   int64    `json:"github_runner_id,omitempty"`
	RunnerStatus     string   `json:"runner_status"`
	ServiceName      string   `json:"service_name"`
	JITConfigEnabled bool     `json:"jit_config_enabled"`
	RunnerVersion    string   `json:"runner_version"`
	MetadataURL      string   `json:"metadata_url"`
	CallbackURL      string   `json:"callback_url"`
}

func (h *Handler) runnerMetadata(w http.ResponseWriter, _ *http.Request, req *request) {
	inst := req.instance
	writeJSON(w, http.StatusOK, runnerMetadata{
		Name:             inst.Name,
		Pool:             inst.Pool,
		Owner:            inst.Owner.String(),
		Labels:           append([]string{}, inst.Labels...),
		CreateAttempt:    inst.CreateAttempt,
		GitHubRunnerID:   inst.GitHubRunnerID,
		RunnerStatus:     string(inst.RunnerStatus),
		ServiceName:      serviceName(inst),
		JITConfigEnabled: true,
		RunnerVersion:    h.runnerVersion,
		MetadataURL:      engine.InstanceURL(h.metadataURL, inst.Name),
		CallbackURL:      engine.InstanceURL(h.callbackURL, inst.Name),
	})
}
