package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/runfleet/runfleet/providers/external/externaltest"
)

// machineState is how far a machine got.
type machineState int

const (
	machineBooting machineState = iota
	// machineReady: its runner is up and may take a job.
	machineReady
	// machineRunning: its runner took a job (a JIT runner takes one only).
	machineRunning
	machineFinished
	// machineDead: its boot was refused or reported failed; its runner
	// never comes up.
	machineDead
	// machineGone: the cloud no longer has it.
	machineGone
)

// machine is one machine of the cloud as the driver plays it.
type machine struct {
	externaltest.Machine
	state     machineState
	seenAt    time.Time
	bootAt    time.Time
	booting   bool // a boot attempt is in flight
	bootTries int
	why       string // why it is dead
	job       int64
}

// Shortest and longest a machine takes to boot before it calls runfleet.
const (
	minBoot = 100 * time.Millisecond
	maxBoot = 800 * time.Millisecond
	// bootGiveUp: a machine that cannot reach runfleet for this long stops
	// trying (its runner never comes up).
	bootGiveUp = time.Minute
)

// bootOutcome is what one boot attempt came to.
type bootOutcome int

const (
	bootReady   bootOutcome = iota
	bootRefused             // runfleet answered 4xx: this machine will never get its runner
	bootFailed              // the machine reported its boot failed (a drawn fault)
	bootRetry               // runfleet unreachable or 5xx: try again
)

// booter plays a machine's user data: the calls a GARM provider's
// cloud-init makes to runfleet's metadata and callback endpoints with the
// instance token the create handed over.
type booter struct {
	client   *http.Client
	seed     uint64
	failRate float64
}

// boot fetches the runner's JIT configuration and reports idle (or, for a
// share of machines, failed). A machine whose runner has its configuration
// is a runner: the idle report is only news for runfleet, and real user
// data does not stop when it is refused.
func (b *booter) boot(ctx context.Context, m externaltest.Machine) (bootOutcome, string) {
	if m.MetadataURL == "" || m.CallbackURL == "" || m.InstanceToken == "" {
		return bootRefused, "the create carried no metadata-url, callback-url or instance-token"
	}
	if status, err := b.call(ctx, http.MethodPost, m.CallbackURL+"/status", m.InstanceToken, `{"status":"installing","message":"chaos machine booting"}`, nil); err != nil || status != http.StatusOK {
		return b.outcome("installing", status, err)
	}
	var runnerFile bytes.Buffer
	if status, err := b.call(ctx, http.MethodGet, m.MetadataURL+"/credentials/runner", m.InstanceToken, "", &runnerFile); err != nil || status != http.StatusOK {
		return b.outcome("credentials/runner", status, err)
	}
	agentID := runnerAgentID(runnerFile.Bytes())
	if b.drawBootFailure(m.Instance.Name) {
		body := `{"status":"failed","message":"chaos: the machine's boot failed"}`
		status, err := b.call(ctx, http.MethodPost, m.CallbackURL+"/status", m.InstanceToken, body, nil)
		if err != nil {
			return bootFailed, fmt.Sprintf("reported failed; the report was lost: %v", err)
		}
		return bootFailed, fmt.Sprintf("reported failed; answered %d", status)
	}
	body := fmt.Sprintf(`{"status":"idle","message":"chaos runner listening","agent_id":%s}`, agentID)
	for range 3 {
		status, err := b.call(ctx, http.MethodPost, m.CallbackURL+"/status", m.InstanceToken, body, nil)
		if err == nil && status < 500 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	return bootReady, ""
}

func (b *booter) outcome(step string, status int, err error) (bootOutcome, string) {
	if err != nil || status >= 500 {
		return bootRetry, fmt.Sprintf("%s: %d %v", step, status, err)
	}
	return bootRefused, fmt.Sprintf("%s: answered %d", step, status)
}

func (b *booter) call(ctx context.Context, method, url, token, body string, out io.Writer) (int, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if out == nil {
		out = io.Discard
	}
	_, err = io.Copy(out, io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, err
}

// drawBootFailure decides from the seed and the name alone, so a replay
// fails the same machines. FNV-1a's top bits barely change with the last
// byte, so the sum is mixed (splitmix64's finalizer) before its top bits
// are read: unmixed, a job's re-served instances (-r2, -r3 … differ in
// their last byte only) all drew the same, and a job whose -r2 failed its
// boot failed every one after it (seen in a -defaults run).
func (b *booter) drawBootFailure(name string) bool {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/boot/%s", b.seed, name)
	return float64(mix64(h.Sum64())>>11)/(1<<53) < b.failRate
}

// mix64 is splitmix64's finalizer: every input bit moves every output bit.
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// runnerAgentID is the runner id in a JIT configuration's .runner file
// ("agentId"), as JSON for the idle report: null when it has none.
func runnerAgentID(runnerFile []byte) string {
	// The metadata endpoint serves the file itself; some serve it base64.
	var doc struct {
		AgentID json.Number `json:"agentId"`
	}
	if json.Unmarshal(runnerFile, &doc) != nil {
		if raw, err := base64.StdEncoding.DecodeString(string(runnerFile)); err == nil {
			_ = json.Unmarshal(raw, &doc)
		}
	}
	if doc.AgentID == "" {
		return "null"
	}
	return doc.AgentID.String()
}
