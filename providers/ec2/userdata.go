package ec2

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/runfleet/runfleet/providers"
)

// UserData is what a user data template sees. It holds no runner
// credentials on purpose: the machine fetches those from MetadataURL with
// InstanceToken, which the control plane accepts only until the runner
// comes online. Anything in user data stays readable from the instance
// metadata service for the machine's whole life.
type UserData struct {
	MetadataURL   string
	InstanceToken string
	Name          string
	Pool          string
	OSType        string // linux or windows
	Arch          string
}

// maxUserDataBytes is EC2's limit on user data before base64 encoding.
const maxUserDataBytes = 16 * 1024

// The default scripts fetch the control plane's install script with the
// instance token and run it, retrying while the network comes up. They use
// only tools every stock image has (bash and curl; PowerShell).
const linuxUserData = `#!/bin/bash
# runfleet: fetch this runner's install script from the control plane and run it.
set -euo pipefail
metadata_url={{shellquote .MetadataURL}}
instance_token={{shellquote .InstanceToken}}
` + providers.FetchInstallScriptShell

const windowsUserData = `<powershell>
# runfleet: fetch this runner's install script from the control plane and run it.
$ErrorActionPreference = 'Stop'
$metadataUrl = {{psquote .MetadataURL}}
$instanceToken = {{psquote .InstanceToken}}
$script = Join-Path $env:TEMP 'runfleet-install.ps1'
for ($attempt = 1; $attempt -le 30; $attempt++) {
  try {
    Invoke-WebRequest -UseBasicParsing -TimeoutSec 30 -Headers @{ Authorization = "Bearer $instanceToken" } -Uri ($metadataUrl.TrimEnd('/') + '/install-script') -OutFile $script
    break
  } catch {
    if ($attempt -eq 30) { throw }
    Start-Sleep -Seconds 5
  }
}
& $script
</powershell>
`

// userDataTemplate is a user data text with {{.Field}} placeholders, each
// optionally quoted: {{shellquote .Field}} or {{psquote .Field}}. This small
// language replaces text/template on purpose: text/template's reflection
// keeps every method of every linked type (the whole EC2 SDK among them) in
// the worker's binary, tripling its size.
type userDataTemplate struct {
	text string
}

var placeholder = regexp.MustCompile(`{{\s*(?:(shellquote|psquote)\s+)?\.([A-Za-z]+)\s*}}`)

var quoters = map[string]func(string) string{
	"":           func(s string) string { return s },
	"shellquote": shellQuote,
	"psquote":    powerShellQuote,
}

func (d UserData) field(name string) (string, bool) {
	switch name {
	case "MetadataURL":
		return d.MetadataURL, true
	case "InstanceToken":
		return d.InstanceToken, true
	case "Name":
		return d.Name, true
	case "Pool":
		return d.Pool, true
	case "OSType":
		return d.OSType, true
	case "Arch":
		return d.Arch, true
	}
	return "", false
}

// render fills the placeholders; an unknown field is an error.
func (t *userDataTemplate) render(d UserData) ([]byte, error) {
	var bad []string
	out := placeholder.ReplaceAllStringFunc(t.text, func(m string) string {
		parts := placeholder.FindStringSubmatch(m)
		v, ok := d.field(parts[2])
		if !ok {
			bad = append(bad, parts[2])
			return m
		}
		return quoters[parts[1]](v)
	})
	if len(bad) > 0 {
		return nil, fmt.Errorf("unknown user data field(s) %s (known: MetadataURL, InstanceToken, Name, Pool, OSType, Arch)", strings.Join(bad, ", "))
	}
	if rest := strings.Index(out, "{{"); rest >= 0 && strings.Contains(out[rest:], "}}") {
		return nil, fmt.Errorf("user data has a placeholder runfleet does not understand near %q; use {{.Field}}, {{shellquote .Field}} or {{psquote .Field}}", out[rest:min(len(out), rest+40)])
	}
	return []byte(out), nil
}

// shellQuote makes s one POSIX shell word.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// powerShellQuote makes s one PowerShell verbatim string.
func powerShellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// parseUserDataTemplate checks a custom template, or returns nil for the
// defaults. A template that cannot render sample data is refused at load,
// not at the first create.
func parseUserDataTemplate(text string) (*userDataTemplate, error) {
	if text == "" {
		return nil, nil
	}
	t := &userDataTemplate{text: text}
	sample := UserData{MetadataURL: "https://runfleet.example/metadata", InstanceToken: "token", Name: "runfleet-pool-1-1", Pool: "pool", OSType: "linux", Arch: "amd64"}
	if _, err := t.render(sample); err != nil {
		return nil, err
	}
	return t, nil
}

var defaultTemplates = map[string]*userDataTemplate{
	"linux":   {text: linuxUserData},
	"windows": {text: windowsUserData},
}

// renderUserData renders the machine's user data for req.
func (p *Provider) renderUserData(req providers.CreateRequest) ([]byte, error) {
	if err := checkBootstrap(req); err != nil {
		return nil, err
	}
	data := UserData{
		MetadataURL:   req.MetadataURL,
		InstanceToken: req.InstanceToken,
		Name:          req.Name,
		Pool:          req.Pool,
		OSType:        osType(req.OSType),
		Arch:          req.Arch,
	}
	t := p.userData
	if t == nil {
		t = defaultTemplates[data.OSType]
	}
	out, err := t.render(data)
	if err != nil {
		return nil, fmt.Errorf("render user data: %w", err)
	}
	if len(out) > maxUserDataBytes {
		return nil, fmt.Errorf("user data is %d bytes; EC2 accepts at most %d", len(out), maxUserDataBytes)
	}
	return out, nil
}

// checkBootstrap refuses a create the machine could never bootstrap from:
// better a failed create the operator can read than a machine that idles
// until the bootstrap timeout.
func checkBootstrap(req providers.CreateRequest) error {
	if req.InstanceToken == "" {
		return errors.New("the create request has no instance token; the machine could not fetch its runner credentials")
	}
	u, err := url.Parse(req.MetadataURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("the create request's metadata URL %q is not an http(s) URL the machine can reach (set server.public_url)", req.MetadataURL)
	}
	return nil
}

func osType(t string) string {
	if strings.EqualFold(t, "windows") {
		return "windows"
	}
	return "linux"
}
