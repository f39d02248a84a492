// Command bootprovider is a GARM external provider for runfleet's runner
// bootstrap tests. Its CreateInstance plays the machine too: with the
// BootstrapInstance it reads from stdin it calls the metadata URL with the
// instance token — fetching the JIT credential files, the service name and
// the unit file, reporting installing, system info and idle, as GARM's
// cloud-init does — before it answers. It writes what it did to
// <dir>/<name>.boot.json so the test can check it and replay the token.
// Machines are files <dir>/<name>.json. GARM_PROVIDER_CONFIG_FILE is a JSON
// object {"dir": "..."}.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/cloudbase/garm-provider-common/params"
)

const exitNotFound = 30

type config struct {
	Dir string `json:"dir"`
}

// Boot is what the machine did, for the test.
type Boot struct {
	Stdin       string            `json:"stdin"`
	Token       string            `json:"token"`
	MetadataURL string            `json:"metadata_url"`
	CallbackURL string            `json:"callback_url"`
	Files       map[string]string `json:"files"`
	ServiceName string            `json:"service_name"`
	UnitFile    string            `json:"unit_file"`
	Statuses    map[string]int    `json:"statuses"`
}

func main() {
	if err := run(); err != nil {
		var code exitCode
		if errors.As(err, &code) {
			os.Exit(int(code))
		}
		fmt.Fprintln(os.Stderr, "bootprovider:", err)
		os.Exit(1)
	}
}

type exitCode int

func (c exitCode) Error() string { return fmt.Sprintf("exit %d", int(c)) }

func run() error {
	raw, err := os.ReadFile(os.Getenv("GARM_PROVIDER_CONFIG_FILE"))
	if err != nil {
		return err
	}
	var cfg config
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return err
	}
	switch cmd := os.Getenv("GARM_COMMAND"); cmd {
	case "CreateInstance":
		return create(cfg)
	case "DeleteInstance":
		path := machinePath(cfg, os.Getenv("GARM_INSTANCE_ID"))
		if err := os.Remove(path); errors.Is(err, os.ErrNotExist) {
			return exitCode(exitNotFound)
		} else if err != nil {
			return err
		}
		return nil
	case "GetInstance":
		data, err := os.ReadFile(machinePath(cfg, os.Getenv("GARM_INSTANCE_ID")))
		if errors.Is(err, os.ErrNotExist) {
			return exitCode(exitNotFound)
		}
		if err != nil {
			return err
		}
		_, err = os.Stdout.Write(data)
		return err
	case "ListInstances":
		return list(cfg)
	case "RemoveAllInstances", "StartInstance", "StopInstance":
		return nil
	case "GetVersion":
		fmt.Print("v0.1.0")
		return nil
	default:
		return fmt.Errorf("unknown command %q", cmd)
	}
}

// machinePath accepts the instance name or the provider id ("boot-<name>").
func machinePath(cfg config, id string) string {
	return filepath.Join(cfg.Dir, strings.TrimPrefix(id, "boot-")+".json")
}

func create(cfg config) error {
	stdin, err := io.ReadAll(os.Stdin)
	if err != nil {
		return err
	}
	var bi params.BootstrapInstance
	if err := json.Unmarshal(stdin, &bi); err != nil {
		return err
	}
	boot := Boot{
		Stdin: string(stdin), Token: bi.InstanceToken, MetadataURL: bi.MetadataURL, CallbackURL: bi.CallbackURL,
		Files: map[string]string{}, Statuses: map[string]int{},
	}
	m := &machine{bi: bi, boot: &boot}
	if err := m.bootstrap(); err != nil {
		boot.Statuses["error"] = 1
		fmt.Fprintln(os.Stderr, "machine:", err)
	}
	record, _ := json.Marshal(boot)
	if err := os.WriteFile(filepath.Join(cfg.Dir, bi.Name+".boot.json"), record, 0o600); err != nil {
		return err
	}
	inst := params.ProviderInstance{
		ProviderID: "boot-" + bi.Name, Name: bi.Name, OSType: bi.OSType, OSArch: bi.OSArch,
		OSName: "bootos", Status: params.InstanceRunning,
	}
	out, _ := json.Marshal(inst)
	if err := os.WriteFile(machinePath(cfg, bi.Name), out, 0o600); err != nil {
		return err
	}
	_, err = os.Stdout.Write(out)
	return err
}

func list(cfg config) error {
	entries, err := os.ReadDir(cfg.Dir)
	if err != nil {
		return err
	}
	var out []params.ProviderInstance
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") || strings.HasSuffix(e.Name(), ".boot.json") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(cfg.Dir, e.Name()))
		if err != nil {
			continue
		}
		var inst params.ProviderInstance
		if json.Unmarshal(data, &inst) == nil {
			out = append(out, inst)
		}
	}
	data, _ := json.Marshal(out)
	_, err = os.Stdout.Write(data)
	return err
}

// machine does what GARM's Linux cloud-init does against the control plane.
type machine struct {
	bi   params.BootstrapInstance
	boot *Boot
}

var agentIDPattern = regexp.MustCompile(`"agentId":\s*([0-9]+)`)

func (m *machine) bootstrap() error {
	if _, err := m.call("installing", http.MethodPost, m.bi.CallbackURL+"/status", `{"status": "installing", "message": "downloading JIT credentials"}`); err != nil {
		return err
	}
	for _, file := range []string{"runner", "credentials", "credentials_rsaparams"} {
		body, err := m.call("credentials/"+file, http.MethodGet, m.bi.MetadataURL+"/credentials/"+file, "")
		if err != nil {
			return err
		}
		m.boot.Files["."+file] = string(body)
	}
	name, err := m.call("service-name", http.MethodGet, m.bi.MetadataURL+"/system/service-name", "")
	if err != nil {
		return err
	}
	m.boot.ServiceName = string(name)
	unit, err := m.call("unit-file", http.MethodGet, m.bi.MetadataURL+"/systemd/unit-file?runAsUser=runner", "")
	if err != nil {
		return err
	}
	m.boot.UnitFile = string(unit)
	agentID := "null"
	if match := agentIDPattern.FindStringSubmatch(m.boot.Files[".runner"]); match != nil {
		agentID = match[1]
	}
	// GARM's script strips /status and posts to system-info/ with a slash.
	if _, err := m.call("system-info", http.MethodPost, m.bi.CallbackURL+"/system-info/",
		`{"os_name": "bootos", "os_version": "1", "agent_id": `+agentID+`}`); err != nil {
		return err
	}
	_, err = m.call("idle", http.MethodPost, m.bi.CallbackURL+"/status",
		`{"status": "idle", "message": "runner successfully installed", "agent_id": `+agentID+`}`)
	return err
}

func (m *machine) call(what, method, url, body string) ([]byte, error) {
	req, err := http.NewRequest(method, url, bytes.NewBufferString(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+m.bi.InstanceToken)
	req.Header.Set("Accept", "application/json")
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	m.boot.Statuses[what] = resp.StatusCode
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %d %s", what, resp.StatusCode, data)
	}
	return data, nil
}
