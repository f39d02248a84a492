package lambdafn_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/runfleet/runfleet/internal/lambdafn"
	"github.com/runfleet/runfleet/internal/lambdafn/work"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/testenv"
	"github.com/runfleet/runfleet/providers"
)

// metadataFunctionURL is the metadata function's URL as the worker gets it
// (RUNFLEET_METADATA_URL, from the stack's MetadataFunctionUrl).
const metadataFunctionURL = "https://mdfnurl0123456789abcdefghijklmno.lambda-url.us-east-1.on.aws/"

// Runner bootstrap on Lambda: the worker (with the metadata URL and the
// token key from Secrets Manager) hands the provider a token and the
// metadata function's per-instance URLs; the machine's requests reach the
// metadata function as real Function URL events; its credentials come back
// byte for byte, installing and idle move the runner in DynamoDB, and a
// failed bootstrap has the worker delete the instance.
func TestMetadataFunctionServesABootingMachine(t *testing.T) {
	s := newStack(t, stackOptions{})
	key, err := secretsmanager.NewFromConfig(s.aws).CreateSecret(context.Background(), &secretsmanager.CreateSecretInput{
		Name: aws.String(testenv.UniqueName(t, "token-key")), SecretString: aws.String("lambda-test-instance-token-key-0123456789abcdef\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(lambdafn.EnvInstanceTokenKeyARN, aws.ToString(key.ARN))
	t.Setenv(lambdafn.EnvMetadataURL, metadataFunctionURL)
	recorder := &createRecorder{}
	intake := s.webhook()
	worker, meta := s.bootWorker(recorder), s.metadata()

	name := s.runJob(t, intake, worker, 7000000301)
	req := recorder.request(t, name)
	if req.InstanceToken == "" || req.MetadataURL != metadataFunctionURL+"metadata/"+name || req.CallbackURL != metadataFunctionURL+"callbacks/"+name {
		t.Fatalf("create request: token %t, metadata %q, callback %q", req.InstanceToken != "", req.MetadataURL, req.CallbackURL)
	}
	inst := s.instance(t, name)

	// The credentials files, as the machine would write them: those of
	// the JIT configuration the simulated GitHub made for its runner.
	files := storedJITFiles(t, s, name)
	if !strings.Contains(files[".runner"], fmt.Sprintf(`"agentId": %d,`, inst.GitHubRunnerID)) {
		t.Fatalf("the stored JIT configuration is not runner %d's: .runner = %q", inst.GitHubRunnerID, files[".runner"])
	}
	for endpoint, file := range map[string]string{"credentials/runner": ".runner", "credentials/credentials_rsaparams": ".credentials_rsaparams"} {
		resp := s.callMetadata(t, meta, http.MethodGet, req, endpoint, req.InstanceToken, "")
		body := decodeBody(t, resp)
		if resp.StatusCode != http.StatusOK || body != files[file] {
			t.Fatalf("GET %s = %d %q", endpoint, resp.StatusCode, body)
		}
		if resp.Headers["Cache-Control"] != "no-store" {
			t.Errorf("GET %s: headers %v, want Cache-Control no-store", endpoint, resp.Headers)
		}
	}
	var md map[string]any
	resp := s.callMetadata(t, meta, http.MethodGet, req, "runner-metadata", req.InstanceToken, "")
	if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(decodeBody(t, resp)), &md) != nil || md["callback_url"] != req.CallbackURL {
		t.Fatalf("runner-metadata = %d %s, want the callback URL derived from the Function URL's domain", resp.StatusCode, resp.Body)
	}
	if resp := s.callMetadata(t, meta, http.MethodGet, req, "credentials/runner", "", ""); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token = %d %s, want 401", resp.StatusCode, resp.Body)
	}

	for _, status := range []string{"installing", "idle"} {
		body := fmt.Sprintf(`{"status": %q, "message": "step", "agent_id": %d}`, status, inst.GitHubRunnerID)
		if resp := s.callMetadata(t, meta, http.MethodPost, req, "status", req.InstanceToken, body); resp.StatusCode != http.StatusOK {
			t.Fatalf("%s callback = %d %s", status, resp.StatusCode, resp.Body)
		}
	}
	if got := s.instance(t, name); got.RunnerStatus != runner.RunnerIdle {
		t.Fatalf("runner status after idle = %s", got.RunnerStatus)
	}
	if _, err := s.store.GetRunnerCredentials(context.Background(), name); !errors.Is(err, store.ErrCredentialsNotFound) {
		t.Fatalf("credentials after idle: %v, want deleted", err)
	}
	if resp := s.callMetadata(t, meta, http.MethodGet, req, "credentials/runner", req.InstanceToken, ""); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("token after idle = %d %s, want 403", resp.StatusCode, resp.Body)
	}

	// A second machine fails; the worker deletes its instance.
	other := s.runJob(t, intake, worker, 7000000302)
	otherReq := recorder.request(t, other)
	if resp := s.callMetadata(t, meta, http.MethodPost, otherReq, "status", otherReq.InstanceToken, `{"status": "failed", "message": "no disk"}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("failed callback = %d %s", resp.StatusCode, resp.Body)
	}
	s.drain(t, worker, 10*time.Second, other+" deleted", s.hasStatus(other, runner.StatusDeleted))
	if got := s.instance(t, other); !strings.Contains(got.ProviderFault, "no disk") {
		t.Fatalf("fault of the failed instance = %q", got.ProviderFault)
	}
	if strings.Contains(s.logs.String(), req.InstanceToken) || strings.Contains(s.logs.String(), otherReq.InstanceToken) {
		t.Fatal("an instance token was logged")
	}
}

// The metadata function needs the token key; without it, it does not start.
func TestMetadataFunctionNeedsTheTokenKey(t *testing.T) {
	_, err := lambdafn.ReadEnv(lambdafn.RoleMetadata, func(name string) (string, bool) {
		if name == lambdafn.EnvInstanceTokenKeyARN {
			return "", false
		}
		return "x", true
	})
	if err == nil || !strings.Contains(err.Error(), lambdafn.EnvInstanceTokenKeyARN) {
		t.Fatalf("ReadEnv without the key ARN = %v, want an error naming it", err)
	}
	_, err = lambdafn.ReadEnv(lambdafn.RoleWorker, func(name string) (string, bool) {
		if name == lambdafn.EnvInstanceTokenKeyARN {
			return "", false
		}
		if name == lambdafn.EnvMetadataURL {
			return metadataFunctionURL, true
		}
		return "x", true
	})
	if err == nil || !strings.Contains(err.Error(), "set both") {
		t.Fatalf("worker with a metadata URL and no key = %v, want an error", err)
	}
}

// bootWorker is s.worker() with providers that record create requests.
func (s *stack) bootWorker(rec *createRecorder) work.SQSHandler {
	return work.NewWorker(func(context.Context) (work.Options, error) {
		opts, err := s.workOptions(lambdafn.RoleWorker)
		provs := map[string]providers.Provider{}
		for pool, p := range s.provs {
			provs[pool] = &recordingProvider{Provider: p, rec: rec}
		}
		opts.Providers = provs
		return opts, err
	}, s.logs.Logger(s.logLevel))
}

// callMetadata sends the machine's request to the metadata function as the
// Function URL event Lambda would deliver.
func (s *stack) callMetadata(t testing.TB, fn lambdafn.FunctionURLHandler, method string, req providers.CreateRequest, endpoint, token, body string) events.LambdaFunctionURLResponse {
	t.Helper()
	var ev events.LambdaFunctionURLRequest
	mustUnmarshal(t, readTestdata(t, "metadata-function-url-event.json"), &ev)
	base := req.MetadataURL
	if method == http.MethodPost {
		base = req.CallbackURL
	}
	path, query, _ := strings.Cut(strings.TrimPrefix(base+"/"+endpoint, strings.TrimSuffix(metadataFunctionURL, "/")), "?")
	ev.RawPath, ev.RequestContext.HTTP.Path, ev.RawQueryString = path, path, query
	ev.RequestContext.HTTP.Method = method
	if token == "" {
		delete(ev.Headers, "authorization")
	} else {
		ev.Headers["authorization"] = "Bearer " + token
	}
	if body != "" {
		ev.Headers["content-type"] = "application/json"
		ev.Body = body
	}
	ctx, _ := s.invocation()
	resp, err := fn(asCaller(ctx, "metadata"), ev)
	if err != nil {
		t.Fatalf("HandleMetadata returned an error (a Function URL would answer 502): %v", err)
	}
	return resp
}

func decodeBody(t testing.TB, resp events.LambdaFunctionURLResponse) string {
	t.Helper()
	if !resp.IsBase64Encoded {
		return resp.Body
	}
	data, err := base64.StdEncoding.DecodeString(resp.Body)
	if err != nil {
		t.Fatalf("response marked base64 is not: %v", err)
	}
	return string(data)
}

// createRecorder keeps every create request, by instance.
type createRecorder struct {
	mu   sync.Mutex
	reqs map[string]providers.CreateRequest
}

func (r *createRecorder) request(t testing.TB, name string) providers.CreateRequest {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	req, ok := r.reqs[name]
	if !ok {
		t.Fatalf("no create request for %s", name)
	}
	return req
}

type recordingProvider struct {
	providers.Provider
	rec *createRecorder
}

func (p *recordingProvider) CreateInstance(ctx context.Context, req providers.CreateRequest) (providers.Instance, error) {
	p.rec.mu.Lock()
	if p.rec.reqs == nil {
		p.rec.reqs = map[string]providers.CreateRequest{}
	}
	p.rec.reqs[req.Name] = req
	p.rec.mu.Unlock()
	return p.Provider.CreateInstance(ctx, req)
}

// storedJITFiles decodes the JIT configuration stored for name (until its
// machine reports idle) as the runner reads it: base64 of a JSON object of
// base64 files.
func storedJITFiles(t testing.TB, s *stack, name string) map[string]string {
	t.Helper()
	creds, err := s.store.GetRunnerCredentials(context.Background(), name)
	if err != nil {
		t.Fatalf("GetRunnerCredentials(%s): %v", name, err)
	}
	doc, err := base64.StdEncoding.DecodeString(creds.EncodedJITConfig)
	var entries map[string]string
	if err == nil {
		err = json.Unmarshal(doc, &entries)
	}
	if err != nil {
		t.Fatalf("JIT configuration of %s is not base64 of a JSON object of strings: %v", name, err)
	}
	files := make(map[string]string, len(entries))
	for file, content := range entries {
		data, err := base64.StdEncoding.DecodeString(content)
		if err != nil {
			t.Fatalf("JIT file %s of %s is not base64: %v", file, name, err)
		}
		files[file] = string(data)
	}
	if len(files) != 3 {
		t.Fatalf("JIT configuration of %s has %d files, want the runner's three", name, len(files))
	}
	return files
}
