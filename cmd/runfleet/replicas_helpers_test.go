package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/github/githubtest"
	"github.com/runfleet/runfleet/internal/httpapi"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/serve"
	"github.com/runfleet/runfleet/internal/serveproc"
	"github.com/runfleet/runfleet/internal/store/postgres"
	"github.com/runfleet/runfleet/providers/external/externaltest"
)

// The replicas test's world: real `runfleet serve` processes built from
// this package, one PostgreSQL database, one fake GitHub served by the test
// (a GitHub every replica sees the same), one fake cloud (the external fake
// provider, whose machines live in one state file under a lock, so every
// replica sees the same machines).
const (
	replicaOrg      = "octo-org"
	replicaRepo     = replicaOrg + "/app"
	replicaPAT      = "e2e-replicas-pat"
	replicaPool     = "linux-x64"
	replicaFirstJob = 9_000_000_001
	// replicaSlowCreate is how long every provider create takes: long
	// enough to kill a replica in the middle of one.
	replicaSlowCreate = 2 * time.Second
	// replicaVisibility bounds a worker's create; with replicaGrace, an
	// instance creating longer has lost its worker.
	replicaVisibility = 4 * time.Second
	replicaGrace      = 2 * time.Second
	// replicaInterval gives a reconciler lease of 3 s (its minimum).
	replicaInterval = time.Second
	replicaLeaseTTL = 3 * time.Second
	// replicaLivenessTTL is serve's liveness lease (not configurable):
	// a dead replica's work is taken over once it lapses.
	replicaLivenessTTL = 15 * time.Second
)

// replicaConfigYAML: PostgreSQL store, the fake GitHub by token, the fake
// cloud, short timeouts.
const replicaConfigYAML = `
controller_id: e2e-replicas
github:
  base_url: %[1]s
  token_env: E2E_GITHUB_TOKEN
webhook:
  secret_env: E2E_WEBHOOK_SECRET
server:
  api_token_env: E2E_API_TOKEN
store:
  kind: postgres
  dsn_env: RUNFLEET_PG_DSN
engine:
  workers: 2
  reconcile_interval: %[2]s
  visibility_timeout: %[3]s
  takeover_grace: %[4]s
  delete_backoff_min: 100ms
  delete_backoff_max: 1s
pools:
  - name: linux-x64
    owner: octo-org
    labels: [self-hosted, linux, x64]
    max_runners: 30
    bootstrap_timeout: 5m
    provider_timeout: 10s
    provider:
      type: external
      settings:
        provider_executable: %[5]q
        config_file: %[6]q
`

// replicaWorld is what the replicas share.
type replicaWorld struct {
	t       *testing.T
	dir     string
	bin     string
	config  string
	env     []string
	gh      *githubtest.Server
	cloud   externaltest.Config
	store   *postgres.Store
	nextJob int64
}

func newReplicaWorld(t *testing.T, dsn string) *replicaWorld {
	t.Helper()
	dir := t.TempDir()
	w := &replicaWorld{t: t, dir: dir, bin: filepath.Join(dir, "runfleet"), nextJob: replicaFirstJob}
	provider := filepath.Join(dir, "fakeprovider")
	for pkg, out := range map[string]string{".": w.bin, "github.com/runfleet/runfleet/providers/external/externaltest/fakeprovider": provider} {
		if msg, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, msg)
		}
	}
	w.gh = githubtest.NewServer(t, githubtest.WithToken(replicaPAT), githubtest.WithRateLimit(1_000_000))
	w.gh.AddOrg(replicaOrg)
	w.cloud = externaltest.Config{
		StateFile: filepath.Join(dir, "cloud.json"),
		Slow:      map[string]string{"CreateInstance": replicaSlowCreate.String()},
	}
	cloudConfig := filepath.Join(dir, "cloud-config.json")
	if err := w.cloud.Write(cloudConfig); err != nil {
		t.Fatal(err)
	}
	w.config = filepath.Join(dir, "runfleet.yaml")
	yaml := fmt.Sprintf(replicaConfigYAML, w.gh.URL(), replicaInterval, replicaVisibility, replicaGrace, provider, cloudConfig)
	if err := os.WriteFile(w.config, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	// Every replica gets the same environment: the secrets and the DSN.
	w.env = []string{
		"PATH=" + os.Getenv("PATH"),
		"E2E_GITHUB_TOKEN=" + replicaPAT,
		"E2E_WEBHOOK_SECRET=" + testSecret,
		"E2E_API_TOKEN=" + testAPIToken,
		"RUNFLEET_PG_DSN=" + dsn,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	w.store = st
	return w
}

// replicaProc is one serve process.
type replicaProc struct {
	name string
	url  string
	log  string
	proc *serveproc.Process
}

// start starts a replica on a free port and waits until it is healthy.
func (w *replicaWorld) start(name string) *replicaProc {
	w.t.Helper()
	port, err := serveproc.FreeLoopbackPort()
	if err != nil {
		w.t.Fatal(err)
	}
	r := &replicaProc{name: name, url: fmt.Sprintf("http://127.0.0.1:%d", port), log: filepath.Join(w.dir, name+".log")}
	logFile, err := os.Create(r.log)
	if err != nil {
		w.t.Fatal(err)
	}
	r.proc, err = serveproc.Start(serveproc.Spec{
		Bin:  w.bin,
		Args: []string{"--config", w.config, "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--log-level", "debug", "--log-format", "json"},
		Env:  w.env, Stdout: logFile, Stderr: logFile,
		OnExit: func(error) { logFile.Close() },
	})
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { _ = r.proc.Kill() })
	if err := r.proc.WaitHealthy(context.Background(), r.url, 30*time.Second); err != nil {
		w.t.Fatalf("%s: %v\n%s", name, err, r.logText())
	}
	return r
}

func (r *replicaProc) logText() string {
	data, _ := os.ReadFile(r.log)
	return string(data)
}

// logLine is one JSON log line of a replica.
type logLine struct {
	Time     time.Time `json:"time"`
	Msg      string    `json:"msg"`
	Replica  string    `json:"replica"`
	Instance string    `json:"instance"`
}

// lines returns the replica's log lines with message msg.
func (r *replicaProc) lines(msg string) []logLine {
	data, _ := os.ReadFile(r.log)
	var out []logLine
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l logLine
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == msg {
			out = append(out, l)
		}
	}
	return out
}

// holder is the replica's lease holder id, from its start line.
func (r *replicaProc) holder(t *testing.T) string {
	t.Helper()
	starts := r.lines("runfleet serving")
	if len(starts) != 1 || starts[0].Replica == "" {
		t.Fatalf("%s: want one start line naming the replica, got %+v", r.name, starts)
	}
	return starts[0].Replica
}

// queueJob adds a queued job to the fake GitHub and delivers its queued
// webhook to r, as GitHub would through the load balancer.
func (w *replicaWorld) queueJob(r *replicaProc) int64 {
	w.t.Helper()
	id := w.nextJob
	w.nextJob++
	w.gh.AddJob(githubtest.Job{ID: id, Repo: replicaRepo, Labels: []string{"self-hosted", "linux", "x64"}})
	d, err := w.gh.SendWorkflowJob(r.url+"/webhook", []byte(testSecret), id, "queued", 0)
	if err != nil || !d.Delivered() {
		w.t.Fatalf("job %d to %s: %+v %v", id, r.name, d, err)
	}
	return id
}

// instances lists every instance, live and deleted, through r's API.
func (w *replicaWorld) instances(r *replicaProc) []*runner.Instance {
	w.t.Helper()
	c, err := httpapi.NewClient(r.url, testAPIToken, nil)
	if err != nil {
		w.t.Fatal(err)
	}
	live, err := c.ListInstancesWhere(context.Background(), httpapi.InstanceFilter{Deleted: true})
	if err != nil {
		w.t.Fatalf("list instances on %s: %v", r.name, err)
	}
	return live
}

// byJob groups instances by the job they were made for.
func byJob(insts []*runner.Instance) map[int64][]*runner.Instance {
	out := map[int64][]*runner.Instance{}
	for _, i := range insts {
		out[i.JobID] = append(out[i.JobID], i)
	}
	return out
}

// machinesByName counts the fake cloud's machines by name.
func (w *replicaWorld) machinesByName() map[string]int {
	w.t.Helper()
	st, err := w.cloud.Read()
	if err != nil {
		w.t.Fatal(err)
	}
	out := map[string]int{}
	for _, m := range st.Machines {
		out[m.Instance.Name]++
	}
	return out
}

// leaseHolder reads who holds the reconciler lease now ("" when free).
func (w *replicaWorld) leaseHolder() string {
	w.t.Helper()
	l, err := w.store.GetLease(context.Background(), serve.ReconcilerLease)
	if err != nil {
		w.t.Fatal(err)
	}
	if l.Free(time.Now()) {
		return ""
	}
	return l.Holder
}

// creatingIn reports whether a provider create runs in process pid: a
// child of it whose environment says GARM_COMMAND=CreateInstance (Linux).
func creatingIn(pid int) bool {
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		child, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", p.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces, so split after ')'.
		rest := string(stat[bytes.LastIndexByte(stat, ')')+1:])
		fields := strings.Fields(rest)
		if len(fields) < 2 || fields[1] != strconv.Itoa(pid) {
			continue
		}
		env, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(child), "environ"))
		if slices.Contains(strings.Split(string(env), "\x00"), "GARM_COMMAND=CreateInstance") {
			return true
		}
	}
	return false
}
