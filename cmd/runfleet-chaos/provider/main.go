// Command provider is the chaos run's GARM external provider (interface
// v0.1.0): its machines live in the cloud package's state file, so they
// survive every runfleet restart, and its config file makes a seeded share
// of CreateInstance and DeleteInstance calls fail or hang — half of them
// after the machine was made or deleted. runfleet-chaos builds it and
// points a pool at it; it is no use on its own.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/cloudbase/garm-provider-common/execution/common"
	"github.com/cloudbase/garm-provider-common/params"
	"github.com/runfleet/runfleet/cmd/runfleet-chaos/internal/cloud"
)

func main() {
	os.Exit(run(os.Stdin, os.Stdout, os.Stderr))
}

// exitError ends the call with a GARM exit code.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func notFound(id string) error {
	return &exitError{code: common.ExitCodeNotFound, msg: "chaos provider: instance " + id + " not found"}
}

// injectedError is the failure a drawn fault causes.
type injectedError struct {
	command string
	fault   cloud.Fault
}

func (e *injectedError) Error() string {
	return fmt.Sprintf("chaos provider: injected %s of %s", e.fault, e.command)
}

func run(stdin io.Reader, stdout, stderr io.Writer) int {
	out, err := call(stdin)
	if err != nil {
		fmt.Fprintln(stderr, err)
		var e *exitError
		if errors.As(err, &e) {
			return e.code
		}
		return 1
	}
	if out != "" {
		fmt.Fprint(stdout, out)
	}
	return 0
}

func call(stdin io.Reader) (string, error) {
	command := common.ExecutionCommand(os.Getenv("GARM_COMMAND"))
	if os.Getenv("GARM_CONTROLLER_ID") == "" || command == "" {
		return "", errors.New("chaos provider: GARM_CONTROLLER_ID and GARM_COMMAND are required")
	}
	cfg, err := cloud.ReadConfig(os.Getenv("GARM_PROVIDER_CONFIG_FILE"))
	if err != nil {
		return "", fmt.Errorf("chaos provider: config: %w", err)
	}
	pool, id := os.Getenv("GARM_POOL_ID"), os.Getenv("GARM_INSTANCE_ID")
	switch command {
	case common.GetVersionCommand:
		return "v0.1.0-chaos", nil
	case common.CreateInstanceCommand:
		return create(cfg, pool, stdin)
	case common.DeleteInstanceCommand:
		return "", remove(cfg, id)
	case common.GetInstanceCommand:
		return get(cfg, id)
	case common.ListInstancesCommand:
		return list(cfg, pool)
	case common.RemoveAllInstancesCommand:
		return "", removeAll(cfg)
	case common.StartInstanceCommand, common.StopInstanceCommand:
		_, err := get(cfg, id)
		return "", err
	default:
		return "", fmt.Errorf("chaos provider: unknown GARM_COMMAND %q", command)
	}
}

// faulted ends a call that drew a fault: a hang sleeps past runfleet's
// timeout first (runfleet kills the process group; if runfleet itself was
// killed meanwhile, the sleep ends and the call fails like any other).
func faulted(cfg cloud.Config, command string, f cloud.Fault) error {
	if f.Hangs() {
		time.Sleep(cfg.HangFor)
	}
	return &injectedError{command: command, fault: f}
}

func create(cfg cloud.Config, pool string, stdin io.Reader) (string, error) {
	const command = string(common.CreateInstanceCommand)
	var b params.BootstrapInstance
	if err := json.NewDecoder(stdin).Decode(&b); err != nil || b.Name == "" || pool == "" {
		return "", fmt.Errorf("chaos provider: CreateInstance needs a BootstrapInstance with a name on stdin and GARM_POOL_ID (decode: %v)", err)
	}
	var (
		fault cloud.Fault
		made  cloud.Machine
	)
	err := cfg.Update(func(s *cloud.State) []cloud.Event {
		fault = draw(cfg, s, command, b.Name)
		var events []cloud.Event
		if fault != cloud.NoFault {
			events = append(events, event(cloud.OpFault, command, pool, b.Name, "", fault))
		}
		if !fault.Acts() {
			return events
		}
		// Like most clouds (EC2 tags, say), names need not be unique: a
		// second create of one name makes a second machine, which the driver
		// then reports.
		s.NextID++
		made = cloud.Machine{
			ProviderID: fmt.Sprintf("chaos-%d", s.NextID), Name: b.Name, Pool: pool, CreatedAt: time.Now().UTC(),
			MetadataURL: b.MetadataURL, CallbackURL: b.CallbackURL, InstanceToken: b.InstanceToken,
		}
		s.Machines = append(s.Machines, made)
		return append(events, event(cloud.OpCreate, command, pool, b.Name, made.ProviderID, fault))
	})
	if err != nil {
		return "", err
	}
	if fault != cloud.NoFault {
		return "", faulted(cfg, command, fault)
	}
	return answer(made)
}

func remove(cfg cloud.Config, id string) error {
	const command = string(common.DeleteInstanceCommand)
	if id == "" {
		return errors.New("chaos provider: DeleteInstance needs GARM_INSTANCE_ID")
	}
	var (
		fault   cloud.Fault
		missing bool
	)
	err := cfg.Update(func(s *cloud.State) []cloud.Event {
		fault = draw(cfg, s, command, id)
		var events []cloud.Event
		if fault != cloud.NoFault {
			events = append(events, event(cloud.OpFault, command, "", id, "", fault))
		}
		if !fault.Acts() {
			return events
		}
		idx, byName := s.Find(id, true)
		if len(idx) == 0 {
			missing = true
			return events
		}
		if byName && cfg.IgnoreDeleteByName {
			return append(events, event(cloud.OpIgnoredDelete, command, "", id, "", fault))
		}
		for _, i := range idx {
			m := s.Machines[i]
			events = append(events, event(cloud.OpDelete, command, m.Pool, m.Name, m.ProviderID, fault))
		}
		s.Remove(idx)
		return events
	})
	switch {
	case err != nil:
		return err
	case fault != cloud.NoFault:
		return faulted(cfg, command, fault)
	case missing:
		return notFound(id)
	}
	return nil
}

func removeAll(cfg cloud.Config) error {
	return cfg.Update(func(s *cloud.State) []cloud.Event {
		var events []cloud.Event
		for _, m := range s.Machines {
			events = append(events, event(cloud.OpDelete, string(common.RemoveAllInstancesCommand), m.Pool, m.Name, m.ProviderID, cloud.NoFault))
		}
		s.Machines = nil
		return events
	})
}

func get(cfg cloud.Config, id string) (string, error) {
	s, err := cfg.Read()
	if err != nil {
		return "", err
	}
	idx, _ := s.Find(id, true)
	if len(idx) == 0 {
		return "", notFound(id)
	}
	return answer(s.Machines[idx[0]])
}

func list(cfg cloud.Config, pool string) (string, error) {
	if pool == "" {
		return "", errors.New("chaos provider: ListInstances needs GARM_POOL_ID")
	}
	s, err := cfg.Read()
	if err != nil {
		return "", err
	}
	out := []params.ProviderInstance{}
	for _, m := range s.Machines {
		if m.Pool == pool {
			out = append(out, instance(m))
		}
	}
	b, err := json.Marshal(out)
	return string(b), err
}

// draw counts this call of command on id and draws its fault.
func draw(cfg cloud.Config, s *cloud.State, command, id string) cloud.Fault {
	if s.Calls == nil {
		s.Calls = map[string]int{}
	}
	key := command + "/" + id
	s.Calls[key]++
	return cfg.Draw(command, id, s.Calls[key])
}

func event(op, command, pool, name, providerID string, f cloud.Fault) cloud.Event {
	return cloud.Event{At: time.Now().UTC(), Op: op, Command: command, Pool: pool, Name: name, ProviderID: providerID, Fault: f, PID: os.Getpid()}
}

func instance(m cloud.Machine) params.ProviderInstance {
	return params.ProviderInstance{
		ProviderID: m.ProviderID, Name: m.Name, Status: params.InstanceRunning,
		OSType: params.Linux, OSArch: params.Amd64, OSName: "chaos", OSVersion: "1",
	}
}

func answer(m cloud.Machine) (string, error) {
	b, err := json.Marshal(instance(m))
	return string(b), err
}
