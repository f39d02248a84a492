package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/cloudbase/garm-provider-common/params"
	"github.com/runfleet/runfleet/providers/external/externaltest"
)

// boot plays the machine b describes booting (Config.BootDir) and writes
// what it did to <dir>/<name>.boot.json, in one rename so a test never
// reads half of it. A failed boot is recorded, not returned: the machine
// exists either way, as a cloud's would.
func boot(dir string, stdin []byte, b params.BootstrapInstance) error {
	rec := externaltest.Boot{
		Stdin: string(stdin), Token: b.InstanceToken, MetadataURL: b.MetadataURL, CallbackURL: b.CallbackURL,
		Files: map[string]string{}, Statuses: map[string]int{},
	}
	m := &machine{bi: b, boot: &rec}
	if err := m.bootstrap(); err != nil {
		rec.Statuses["error"] = 1
		fmt.Fprintln(os.Stderr, "machine:", err)
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, b.Name+".boot.json")
	if err := os.WriteFile(path+".tmp", data, 0o600); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

// machine does what GARM's Linux cloud-init does against the control plane.
type machine struct {
	bi   params.BootstrapInstance
	boot *externaltest.Boot
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
