// Command fakeprovider is runfleet's GARM external provider for tests:
// machines are entries in a JSON state file, and its config file
// (externaltest.Config) makes it misbehave on request or play each machine
// booting (boot.go). Build it with externaltest.Build.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/cloudbase/garm-provider-common/execution/common"
	"github.com/cloudbase/garm-provider-common/params"
	"github.com/runfleet/runfleet/providers/external/externaltest"
)

// childRole marks the process a hanging call starts, to show that killing
// the provider's process group takes its children too.
const childRole = "FAKEPROVIDER_ROLE=child"

func main() {
	os.Exit(run())
}

// exitError carries an exit code out of a command.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func run() int {
	if slices.Contains(os.Environ(), childRole) {
		hangForever()
	}
	stdin, err := io.ReadAll(os.Stdin)
	if err != nil {
		return fail(fmt.Errorf("read stdin: %w", err))
	}
	command := os.Getenv("GARM_COMMAND")
	cfgPath := os.Getenv("GARM_PROVIDER_CONFIG_FILE")
	if cfgPath == "" {
		return fail(errors.New("missing GARM_PROVIDER_CONFIG_FILE"))
	}
	cfg, err := externaltest.ReadConfig(cfgPath)
	if err != nil {
		return fail(fmt.Errorf("read config: %w", err))
	}
	if err := record(cfg.RecordFile, command, stdin); err != nil {
		return fail(err)
	}
	if os.Getenv("GARM_CONTROLLER_ID") == "" || command == "" {
		return fail(errors.New("missing GARM_CONTROLLER_ID or GARM_COMMAND"))
	}
	if delay, ok := cfg.Slow[command]; ok {
		d, err := time.ParseDuration(delay)
		if err != nil {
			return fail(fmt.Errorf("slow %s: %w", command, err))
		}
		time.Sleep(d)
	}
	if slices.Contains(cfg.Hang, command) {
		hang(cfg.PIDFile)
	}
	if code, ok := cfg.Fail[command]; ok {
		fmt.Print(`{"provider_id": "ignored-on-failure", "name": "ignored", "status": "running"}`)
		fmt.Fprintf(os.Stderr, "fake failure of %s%s", command, strings.Repeat("x", cfg.FailStderrBytes))
		return code
	}
	if slices.Contains(cfg.BadJSON, command) {
		fmt.Print(`{"provider_id": "fk-1", "name": `)
		return 0
	}
	out, err := dispatch(cfg, common.ExecutionCommand(command), stdin)
	if err != nil {
		return fail(err)
	}
	fmt.Print(out)
	return 0
}

// findTools looks for the runner build of the machine's OS and
// architecture the way GARM's providers do: by GitHub's names (win, x64)
// or by GARM's own (windows, amd64).
func findTools(b params.BootstrapInstance) error {
	githubOS := map[params.OSType]string{params.Linux: "linux", params.Windows: "win"}[b.OSType]
	githubArch := map[params.OSArch]string{params.Amd64: "x64", params.Arm64: "arm64", params.Arm: "arm"}[b.OSArch]
	if githubOS == "" || githubArch == "" {
		return fmt.Errorf("unsupported OS %q or arch %q", b.OSType, b.OSArch)
	}
	for _, t := range b.Tools {
		osFits := t.GetOS() == githubOS || t.GetOS() == string(b.OSType)
		archFits := t.GetArchitecture() == githubArch || t.GetArchitecture() == string(b.OSArch)
		if osFits && archFits && t.GetDownloadURL() != "" {
			return nil
		}
	}
	return fmt.Errorf("no runner download for OS %s and arch %s among %d tools", b.OSType, b.OSArch, len(b.Tools))
}

func fail(err error) int {
	fmt.Fprintln(os.Stderr, err)
	var e *exitError
	if errors.As(err, &e) {
		return e.code
	}
	return 1
}

func notFound(id string) error {
	return &exitError{code: common.ExitCodeNotFound, msg: "instance " + id + " not found"}
}

func dispatch(cfg externaltest.Config, command common.ExecutionCommand, stdin []byte) (string, error) {
	pool, instanceID := os.Getenv("GARM_POOL_ID"), os.Getenv("GARM_INSTANCE_ID")
	switch command {
	case common.GetVersionCommand:
		return "v0.1.0-fake", nil
	case common.CreateInstanceCommand:
		return create(cfg, pool, stdin)
	case common.GetInstanceCommand:
		s, err := cfg.Read()
		if err != nil {
			return "", err
		}
		idx, _ := s.Find(instanceID, true)
		if len(idx) == 0 {
			return "", notFound(instanceID)
		}
		return answer(cfg, s.Machines[idx[0]].Instance)
	case common.ListInstancesCommand:
		return list(cfg, pool)
	case common.DeleteInstanceCommand:
		return "", remove(cfg, instanceID)
	case common.RemoveAllInstancesCommand:
		return "", cfg.Update(func(s *externaltest.State) ([]externaltest.Event, error) {
			var events []externaltest.Event
			for _, m := range s.Machines {
				events = append(events, event(externaltest.OpDelete, string(command), m.Pool, m.Instance.Name, m.Instance.ProviderID, externaltest.NoFault))
			}
			s.Machines = nil
			return events, nil
		})
	case common.StartInstanceCommand, common.StopInstanceCommand:
		status := params.InstanceRunning
		if command == common.StopInstanceCommand {
			status = params.InstanceStopped
		}
		return "", cfg.Update(func(s *externaltest.State) ([]externaltest.Event, error) {
			idx, _ := s.Find(instanceID, true)
			if len(idx) == 0 {
				return nil, notFound(instanceID)
			}
			s.Machines[idx[0]].Instance.Status = status
			return nil, nil
		})
	default:
		return "", fmt.Errorf("unknown GARM_COMMAND %q", command)
	}
}

func create(cfg externaltest.Config, pool string, stdin []byte) (string, error) {
	const command = string(common.CreateInstanceCommand)
	var b params.BootstrapInstance
	if err := json.Unmarshal(stdin, &b); err != nil || b.Name == "" || pool == "" {
		return "", fmt.Errorf("CreateInstance needs bootstrap params on stdin and GARM_POOL_ID (err %v)", err)
	}
	if cfg.RequireTools {
		if err := findTools(b); err != nil {
			return "", fmt.Errorf("failed to get tools: %w", err)
		}
	}
	if cfg.BootDir != "" {
		if err := boot(cfg.BootDir, stdin, b); err != nil {
			return "", err
		}
	}
	var (
		fault   externaltest.Fault
		created params.ProviderInstance
	)
	err := cfg.Update(func(s *externaltest.State) ([]externaltest.Event, error) {
		fault = draw(cfg, s, command, b.Name)
		var events []externaltest.Event
		if fault != externaltest.NoFault {
			events = append(events, event(externaltest.OpFault, command, pool, b.Name, "", fault))
		}
		if !fault.Acts() {
			return events, nil
		}
		if idx, _ := s.Find(b.Name, true); len(idx) > 0 && !cfg.AllowDuplicateNames {
			return events, &exitError{code: common.ExitCodeDuplicate, msg: "instance " + b.Name + " exists"}
		}
		s.NextID++
		created = params.ProviderInstance{
			ProviderID: fmt.Sprintf("fk-%d", s.NextID), Name: b.Name, Status: params.InstanceRunning,
			OSType: b.OSType, OSArch: b.OSArch, OSName: "fakeos",
		}
		s.Machines = append(s.Machines, externaltest.Machine{
			Pool: pool, Instance: created, CreatedAt: time.Now().UTC(),
			MetadataURL: b.MetadataURL, CallbackURL: b.CallbackURL, InstanceToken: b.InstanceToken,
		})
		return append(events, event(externaltest.OpCreate, command, pool, b.Name, created.ProviderID, fault)), nil
	})
	if err != nil {
		return "", err
	}
	if fault != externaltest.NoFault {
		return "", faulted(cfg, command, fault)
	}
	return answer(cfg, created)
}

// remove deletes the machine with provider id id or, when none has it,
// every machine named id — unless IgnoreDeleteByName, which answers a
// delete by name with success and leaves the machines running.
func remove(cfg externaltest.Config, id string) error {
	const command = string(common.DeleteInstanceCommand)
	var fault externaltest.Fault
	err := cfg.Update(func(s *externaltest.State) ([]externaltest.Event, error) {
		fault = draw(cfg, s, command, id)
		var events []externaltest.Event
		if fault != externaltest.NoFault {
			events = append(events, event(externaltest.OpFault, command, "", id, "", fault))
		}
		if !fault.Acts() {
			return events, nil
		}
		idx, byName := s.Find(id, true)
		if len(idx) == 0 {
			if fault != externaltest.NoFault {
				return events, nil // the fault is the answer
			}
			return events, notFound(id)
		}
		if byName && cfg.IgnoreDeleteByName {
			return append(events, event(externaltest.OpIgnoredDelete, command, "", id, "", fault)), nil
		}
		for _, i := range idx {
			m := s.Machines[i]
			events = append(events, event(externaltest.OpDelete, command, m.Pool, m.Instance.Name, m.Instance.ProviderID, fault))
		}
		s.Remove(idx)
		return events, nil
	})
	if err != nil {
		return err
	}
	if fault != externaltest.NoFault {
		return faulted(cfg, command, fault)
	}
	return nil
}

// draw counts this call of command on id and draws its fault.
func draw(cfg externaltest.Config, s *externaltest.State, command, id string) externaltest.Fault {
	if cfg.FailRate == 0 && cfg.HangRate == 0 {
		return externaltest.NoFault
	}
	if s.Calls == nil {
		s.Calls = map[string]int{}
	}
	key := command + "/" + id
	s.Calls[key]++
	return cfg.Draw(command, id, s.Calls[key])
}

// faulted ends a call that drew a fault: a hang sleeps for HangFor first,
// past the caller's timeout (the caller kills the process group; if the
// caller itself was killed meanwhile, the sleep ends and the call fails
// like any other).
func faulted(cfg externaltest.Config, command string, f externaltest.Fault) error {
	if f.Hangs() {
		time.Sleep(cfg.HangFor)
	}
	return fmt.Errorf("fake provider: injected %s of %s", f, command)
}

func event(op, command, pool, name, providerID string, f externaltest.Fault) externaltest.Event {
	return externaltest.Event{At: time.Now().UTC(), Op: op, Command: command, Pool: pool, Name: name, ProviderID: providerID, Fault: f, PID: os.Getpid()}
}

func list(cfg externaltest.Config, pool string) (string, error) {
	switch cfg.ListOutput {
	case "null":
		return "null", nil
	case "empty":
		return "", nil
	}
	s, err := cfg.Read()
	if err != nil {
		return "", err
	}
	items := []json.RawMessage{}
	for _, m := range s.Machines {
		if m.Pool != pool {
			continue
		}
		one, err := answer(cfg, m.Instance)
		if err != nil {
			return "", err
		}
		items = append(items, json.RawMessage(one))
	}
	out, err := json.Marshal(items)
	return string(out), err
}

// answer prints in as the config's misbehaviours want it.
func answer(cfg externaltest.Config, in params.ProviderInstance) (string, error) {
	if cfg.Status != "" {
		in.Status = params.InstanceStatus(cfg.Status)
	}
	if cfg.Fault != "" {
		in.ProviderFault = []byte(cfg.Fault)
	}
	if cfg.OmitProviderID {
		in.ProviderID = ""
	}
	out, err := json.Marshal(in)
	if err != nil || cfg.PlainTextFault == "" {
		return string(out), err
	}
	var fields map[string]any
	if err := json.Unmarshal(out, &fields); err != nil {
		return "", err
	}
	fields["provider_fault"] = cfg.PlainTextFault
	out, err = json.Marshal(fields)
	return string(out), err
}

func record(path, command string, stdin []byte) error {
	if path == "" {
		return nil
	}
	env := map[string]string{}
	vars := os.Environ()
	sort.Strings(vars)
	for _, kv := range vars {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	line, err := json.Marshal(externaltest.Record{Command: command, Env: env, Stdin: string(stdin)})
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.Write(append(line, '\n'))
	return err
}

// hang starts a child sharing this process's group and output, records both
// pids, and never returns.
func hang(pidFile string) {
	self, err := os.Executable()
	if err != nil {
		os.Exit(fail(err))
	}
	child := exec.Command(self)
	child.Env = []string{childRole}
	child.Stdout, child.Stderr = os.Stdout, os.Stderr
	if err := child.Start(); err != nil {
		os.Exit(fail(err))
	}
	if pidFile != "" {
		tmp := pidFile + ".tmp"
		if err := os.WriteFile(tmp, fmt.Appendf(nil, "%d %d", os.Getpid(), child.Process.Pid), 0o600); err != nil {
			os.Exit(fail(err))
		}
		if err := os.Rename(tmp, pidFile); err != nil {
			os.Exit(fail(err))
		}
	}
	hangForever()
}

func hangForever() {
	for {
		time.Sleep(time.Hour)
	}
}
