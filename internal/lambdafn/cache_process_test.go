package lambdafn_test

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/cache/cachetest"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/runfleet/runfleet/internal/cache"
	"github.com/runfleet/runfleet/internal/cacheagent"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/testenv"
	"github.com/runfleet/runfleet/internal/testlog"
)

// functionURLFront plays the metadata function's Function URL: each HTTP
// request becomes a payload 2.0 event, handed in turn to the function's
// execution environments (several concurrent instances sharing the cache's
// index), and the function's answer the HTTP response.
type functionURLFront struct {
	fns  []*function
	next atomic.Int64
}

func (f *functionURLFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	headers := map[string]string{}
	for name, values := range r.Header {
		headers[strings.ToLower(name)] = strings.Join(values, ",")
	}
	ev := events.LambdaFunctionURLRequest{
		Version: "2.0", RawPath: r.URL.Path, RawQueryString: r.URL.RawQuery, Headers: headers,
		Body: base64.StdEncoding.EncodeToString(body), IsBase64Encoded: true,
		RequestContext: events.LambdaFunctionURLRequestContext{
			DomainName: r.Host,
			HTTP:       events.LambdaFunctionURLRequestContextHTTPDescription{Method: r.Method, Path: r.URL.Path, SourceIP: "127.0.0.1"},
		},
	}
	payload, _ := json.Marshal(ev)
	fn := f.fns[int(f.next.Add(1))%len(f.fns)]
	resp, fnErr, err := fn.api.Invoke(r.Context(), payload)
	if err != nil || fnErr != nil {
		http.Error(w, fmt.Sprintf("function failed: %v %+v", err, fnErr), http.StatusBadGateway)
		return
	}
	var out events.LambdaFunctionURLResponse
	if err := json.Unmarshal(resp, &out); err != nil {
		http.Error(w, "function answer: "+err.Error(), http.StatusBadGateway)
		return
	}
	b := []byte(out.Body)
	if out.IsBase64Encoded {
		b, _ = base64.StdEncoding.DecodeString(out.Body)
	}
	for name, value := range out.Headers {
		w.Header().Set(name, value)
	}
	w.WriteHeader(out.StatusCode)
	_, _ = w.Write(b)
}

// cacheMachine is one runner machine: its cache agent on HTTPS with the
// machine's CA, its job registered as the job-started hook does.
type cacheMachine struct {
	t        testing.TB
	agentURL string
	caFile   string
	agent    *cacheagent.Agent
}

func startCacheMachine(t testing.TB, frontURL, agentToken string, job cache.JobEnv, log *slog.Logger) *cacheMachine {
	t.Helper()
	jobs := &cacheagent.JobTokens{URL: frontURL + cache.JobTokenPath, AgentToken: func() (string, error) { return agentToken, nil }, Log: log}
	if err := jobs.Register(job); err != nil {
		t.Fatal(err)
	}
	agent, err := cacheagent.New(cacheagent.Options{CacheURL: frontURL, Tokens: jobs, Upstream: http.DefaultTransport, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	ca, err := cacheagent.NewCA(time.Now(), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, ca.PEM, 0o644); err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Leaf("localhost")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(agent)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{leaf}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	return &cacheMachine{t: t, agentURL: "https://localhost:" + port + "/", caFile: caFile, agent: agent}
}

// run runs GitHub's client (npm @actions/cache) as a node action of the
// machine's job; it returns the client's result line and its output.
func (m *cacheMachine) run(client, workspace string, args ...string) (map[string]any, string) {
	m.t.Helper()
	script, err := filepath.Abs(filepath.Join("..", "cache", "testdata", "client.mjs"))
	if err != nil {
		m.t.Fatal(err)
	}
	cmd := exec.Command("node", append([]string{script}, args...)...)
	cmd.Dir = workspace
	cmd.Env = append(os.Environ(),
		"CACHE_CLIENT_DIR="+client,
		"NODE_EXTRA_CA_CERTS="+m.caFile,
		"ACTIONS_CACHE_SERVICE_V2=true",
		"ACTIONS_RESULTS_URL="+m.agentURL,
		"ACTIONS_RUNTIME_TOKEN=github-runtime-token-the-agent-replaces",
		"ACTIONS_CACHE_URL=",
		"GITHUB_SERVER_URL=https://github.com",
		"GITHUB_WORKSPACE="+workspace,
		"RUNNER_TEMP="+m.t.TempDir(),
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		m.t.Fatalf("client %v failed (a cache must never fail the job): %v\n%s", args, err, out)
	}
	res := map[string]any{}
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, "RESULT "); ok {
			if err := json.Unmarshal([]byte(rest), &res); err != nil {
				m.t.Fatalf("client result %q: %v", rest, err)
			}
		}
	}
	return res, string(out)
}

// liveMachine puts a running machine of repository's job in the ledger.
func liveMachine(t testing.TB, ls *localStack, jobID int64, repository string) string {
	t.Helper()
	now := time.Now()
	job := &runner.Job{
		ID: jobID, RunAttempt: 1, Pool: linuxPool, Owner: runner.Owner{Org: "octo-org"}, Repository: repository,
		Labels: []string{"self-hosted", "linux", "x64"}, Status: runner.JobOpen, Made: 1,
		QueuedAt: now, CreatedAt: now, UpdatedAt: now, StatusChangedAt: now,
	}
	job.Instance = job.InstanceFor(1)
	if err := ls.store.CreateInstance(context.Background(), store.Admission{
		Instance: &runner.Instance{
			Name: job.Instance, Pool: linuxPool, Status: runner.StatusPendingCreate, RunnerStatus: runner.RunnerPending,
			JobID: job.ID, RunAttempt: 1, Repository: repository, Owner: runner.Owner{Org: "octo-org"}, Labels: job.Labels,
			CreatedAt: now, UpdatedAt: now, StatusChangedAt: now,
		},
		MaxRunners: 50,
		Job:        job,
	}); err != nil {
		t.Fatal(err)
	}
	inst, err := ls.store.GetInstance(context.Background(), job.Instance)
	if err != nil {
		t.Fatal(err)
	}
	for _, status := range []runner.Status{runner.StatusCreating, runner.StatusRunning} {
		next := *inst
		next.Status = status
		if err := ls.store.UpdateInstance(context.Background(), inst.Status, &next); err != nil {
			t.Fatal(err)
		}
		inst = &next
	}
	return job.Instance
}

// metadataCache is the stack GitHub's client is run against on the Lambda
// path: the metadata function run as its deployed bootstrap under the
// Lambda Runtime API (two execution environments behind one Function URL,
// the index shared in DynamoDB Local), the archives in a moto bucket.
type metadataCache struct {
	client string // GitHub's client, installed
	url    string // the Function URL
	s3     *s3.Client
	bucket string
	ls     *localStack
	agents *cache.AgentTokens
	logs   *testlog.Buffer // the machines' agents'
}

func newMetadataCache(t testing.TB) *metadataCache {
	t.Helper()
	client := cachetest.InstallClient(t)
	bins := buildBootstraps(t, "metadata")
	ctx := context.Background()

	front := &functionURLFront{}
	srv := httptest.NewServer(front)
	t.Cleanup(srv.Close)

	s3c := s3.NewFromConfig(testenv.AWSConfig(t), func(o *s3.Options) { o.UsePathStyle = true })
	bucket := strings.Trim(strings.ToLower(strings.ReplaceAll(testenv.UniqueName(t, "fncache"), "_", "-")), "-")
	if len(bucket) > 63 {
		bucket = strings.Trim(bucket[len(bucket)-63:], "-")
	}
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
		t.Fatal(err)
	}
	const token = "ghp_cachetest0123456789"
	gh := fakeGitHub(t, token)
	config := processConfig(gh.URL()) + fmt.Sprintf(`server:
  public_url: %s
cache:
  s3: {bucket: %s, path_style: true}
  pools: [%s]
`, srv.URL, bucket, linuxPool)
	ls := newLocalStack(t, config, token)
	index := testenv.UniqueName(t, "cacheindex")
	if err := cache.CreateDynamoTable(ctx, ls.ddb, index); err != nil {
		t.Fatal(err)
	}
	ls.deploy.refs["CacheIndexTable"], ls.deploy.refs["CacheBucket"] = index, bucket
	ls.deploy.conditions["CreateCacheBucket"] = true
	for range 2 {
		front.fns = append(front.fns, ls.startFunction(t, "MetadataFunction", bins["metadata"], ""))
	}
	mc := &metadataCache{client: client, url: srv.URL, s3: s3c, bucket: bucket, ls: ls, logs: &testlog.Buffer{}}
	t.Cleanup(func() {
		if t.Failed() {
			for _, fn := range front.fns {
				t.Logf("%s output:\n%s", fn.name, fn.proc.Output())
			}
			t.Logf("agent logs:\n%s", mc.logs.Tail(60))
		}
	})

	// The machines' agent tokens, as metadata/cache-agent mints them at
	// boot with the stack's instance token key.
	agents, err := cache.NewAgentTokens([]byte(processTestTokenKey), "process-test", nil)
	if err != nil {
		t.Fatal(err)
	}
	mc.agents = agents
	return mc
}

// machine starts the agent of a running machine of repository repo's job
// on ref.
func (mc *metadataCache) machine(t testing.TB, jobID int64, repo, ref string) *cacheMachine {
	t.Helper()
	name := liveMachine(t, mc.ls, jobID, repo)
	tok, err := mc.agents.Mint(name, linuxPool, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return startCacheMachine(t, mc.url, tok, cache.JobEnv{Repository: repo, Ref: ref, EventName: "push", DefaultBranch: "main"}, mc.logs.Logger(slog.LevelInfo))
}

// TestMetadataFunctionServesTheCache: GitHub's own cache client, through
// the machine's agent, against the metadata function run as its deployed
// bootstrap under the Lambda Runtime API (two execution environments, the
// index shared in DynamoDB Local), with the archives in a moto bucket:
// save and restore of 1 MiB, 100 MiB (one Put Blob, one object), 160 MiB
// (three blocks at once, each sent as part objects of 8 MiB at most,
// presigned by either instance; restored by the agent from the parts) and
// 1 GB (10^9 bytes, 120 parts), restore-key fallback, a second save refused, and repository A's
// token reading nothing of B's.
func TestMetadataFunctionServesTheCache(t *testing.T) {
	mc := newMetadataCache(t)
	client, s3c, bucket, ctx := mc.client, mc.s3, mc.bucket, context.Background()
	machine := func(jobID int64, repo, ref string) *cacheMachine { return mc.machine(t, jobID, repo, ref) }
	a1 := machine(7000034001, "octo-org/app", "refs/heads/main")
	ws := t.TempDir()
	sum := cachetest.WriteData(t, ws, 1<<20)
	if res, out := a1.run(client, ws, "save", "data", "deps-linux-abc"); res["id"] == nil {
		t.Fatalf("save: %s", out)
	}
	if got := a1.agent.Counts().DirectParts; got != 1 {
		t.Fatalf("the agent sent %d parts straight to the bucket, want 1", got)
	}

	// Another job of the repository restores it exactly, then by a
	// restore key; a second save of the key is refused and the job goes on.
	a2 := machine(7000034002, "octo-org/app", "refs/heads/main")
	restore := t.TempDir()
	if res, out := a2.run(client, restore, "restore", "data", "deps-linux-abc"); res["matched"] != "deps-linux-abc" {
		t.Fatalf("exact restore matched %v:\n%s", res["matched"], out)
	}
	if got, ok := cachetest.ReadData(t, restore); !ok || got != sum {
		t.Fatal("the restored archive is not what was saved")
	}
	fallback := t.TempDir()
	if res, out := a2.run(client, fallback, "restore", "data", "deps-linux-def", "deps-linux-"); res["matched"] != "deps-linux-abc" {
		t.Fatalf("restore-key restore matched %v:\n%s", res["matched"], out)
	}
	if got, ok := cachetest.ReadData(t, fallback); !ok || got != sum {
		t.Fatal("the archive restored by a restore key is not what was saved")
	}
	cachetest.WriteData(t, ws, 4096)
	if res, out := a2.run(client, ws, "save", "data", "deps-linux-abc"); res["id"] != float64(-1) || !strings.Contains(out, "another job may be creating this cache") {
		t.Fatalf("a second save of the key = %v:\n%s", res["id"], out)
	}

	// Straight to the bucket: 100 MiB is the SDK's one Put Blob (up to
	// 128 MiB), the entry's one object, restored on one presigned GET;
	// 160 MiB is three blocks of 64 MiB or less staged at once, each sent
	// as part objects of 8 MiB at most (8 + 8 + 5: the archive of random
	// bytes is a few KB over the data), presigned by either instance, then
	// one completion in block order; the restore is the agent's, part by
	// part from the bucket. 1 GB (10^9 bytes) is fourteen blocks of 8
	// parts and one of ~60 MB, 8 more; one save, one restore: it is the
	// acceptance's size, and the slowest case here.
	for _, c := range []struct {
		name  string
		size  int
		parts int64
	}{{"100m", 100 << 20, 1}, {"160m", 160 << 20, 21}, {"1g", 1_000_000_000, 120}} {
		start := time.Now()
		dir := t.TempDir()
		sum := cachetest.WriteData(t, dir, c.size)
		before, restored := a1.agent.Counts().DirectParts, a2.agent.Counts().RestoredParts
		if res, out := a1.run(client, dir, "save", "data", "build-"+c.name); res["id"] == nil || res["id"] == float64(-1) {
			t.Fatalf("%s save: %s", c.name, out)
		}
		cachetest.ClearData(t, dir)
		if got := a1.agent.Counts().DirectParts - before; got != c.parts {
			t.Fatalf("the agent sent %d parts of %s straight to the bucket, want %d", got, c.name, c.parts)
		}
		back := t.TempDir()
		if res, out := a2.run(client, back, "restore", "data", "build-"+c.name); res["matched"] != "build-"+c.name {
			t.Fatalf("%s restore matched %v:\n%s", c.name, res["matched"], out)
		}
		if got, ok := cachetest.ReadData(t, back); !ok || got != sum {
			t.Fatalf("the restored %s archive is not what was saved", c.name)
		}
		cachetest.ClearData(t, back)
		want := c.parts
		if c.parts == 1 {
			want = 0 // one object: a presigned GET, not the agent
		}
		if got := a2.agent.Counts().RestoredParts - restored; got != want {
			t.Fatalf("the agent restored %d parts of %s, want %d", got, c.name, want)
		}
		t.Logf("%s: save and restore in %s", c.name, time.Since(start).Round(100*time.Millisecond))
	}

	// A job of another repository reads nothing of it.
	b := machine(7000034003, "octo-org/other", "refs/heads/main")
	other := t.TempDir()
	if res, out := b.run(client, other, "restore", "data", "deps-linux-abc", "deps-"); res["matched"] != nil {
		t.Fatalf("repository B restored A's entry %v:\n%s", res["matched"], out)
	}

	// The single-shot archives are objects under blobs/, the others
	// their parts under parts/<id>/, nothing else is in the bucket, and
	// no multipart upload was made.
	list, err := s3c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &bucket})
	if err != nil {
		t.Fatal(err)
	}
	var blobs, parts int
	var keys []string
	for _, o := range list.Contents {
		k := aws.ToString(o.Key)
		keys = append(keys, k)
		switch {
		case strings.HasPrefix(k, "blobs/"):
			blobs++
		case strings.HasPrefix(k, "parts/"):
			parts++
		}
	}
	if blobs != 2 || parts != 21+120 || len(keys) != blobs+parts {
		t.Fatalf("bucket holds %v, want two archives under blobs/ and 141 parts under parts/", keys)
	}
	uploads, err := s3c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &bucket})
	if err != nil || len(uploads.Uploads) != 0 {
		t.Fatalf("multipart uploads left: %d, %v", len(uploads.Uploads), err)
	}
}

// processTestTokenKey is the InstanceTokenKey secret newLocalStack makes.
const processTestTokenKey = "process-test-instance-token-key-0123456789abcdef"
