package scalesettest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// The fake's wire shapes, checked over raw HTTP against the protocol's
// published facts (field names and status codes in docs/scale-sets.md),
// independently of the client that is tested against it.

type rawAnswer struct {
	status int
	body   map[string]any
}

func raw(t *testing.T, method, url, auth string, body any, header map[string]string) rawAnswer {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", auth)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	out := rawAnswer{status: resp.StatusCode}
	data, _ := io.ReadAll(resp.Body)
	if len(bytes.TrimSpace(data)) > 0 {
		_ = json.Unmarshal(data, &out.body)
	}
	return out
}

func wantKeys(t *testing.T, what string, m map[string]any, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			t.Errorf("%s lacks %q: %v", what, k, m)
		}
	}
}

func TestWireShapes(t *testing.T) {
	s := New(t, Options{})
	tok, err := s.Tokens().RegistrationToken(t.Context(), s.Owner())
	if err != nil {
		t.Fatal(err)
	}
	reg := raw(t, "POST", s.APIURL()+"/actions/runner-registration", "RemoteAuth "+tok.Token,
		map[string]string{"url": s.URL() + "/octo-org", "runner_event": "register"}, nil)
	if reg.status != 200 || reg.body["url"] == "" || reg.body["token"] == "" {
		t.Fatalf("registration: %+v", reg)
	}
	if bad := raw(t, "POST", s.APIURL()+"/actions/runner-registration", "Bearer "+tok.Token,
		map[string]string{"url": s.URL() + "/octo-org", "runner_event": "register"}, nil); bad.status != 401 {
		t.Errorf("registration with a Bearer token: %d, want 401", bad.status)
	}
	admin := "Bearer " + reg.body["token"].(string)
	svc := reg.body["url"].(string)
	v := "?api-version=6.0-preview"

	if got := raw(t, "GET", svc+"_apis/runtime/runnergroups/?groupName=default", admin, nil, nil); got.status != 400 {
		t.Errorf("without api-version: %d, want 400", got.status)
	}
	groups := raw(t, "GET", svc+"_apis/runtime/runnergroups/"+v+"&groupName=default", admin, nil, nil)
	wantKeys(t, "group list", groups.body, "count", "value")
	group := groups.body["value"].([]any)[0].(map[string]any)
	wantKeys(t, "group", group, "id", "name", "size", "isDefaultGroup")

	set := raw(t, "POST", svc+"_apis/runtime/runnerscalesets"+v, admin, map[string]any{
		"name": "linux", "runnerGroupId": group["id"], "labels": []map[string]string{{"type": "System", "name": "linux"}},
		"RunnerSetting": map[string]bool{"disableUpdate": true},
	}, nil)
	if set.status != 200 {
		t.Fatalf("create scale set: %+v", set)
	}
	wantKeys(t, "scale set", set.body, "id", "name", "runnerGroupId", "runnerGroupName", "labels", "createdOn", "runnerJitConfigUrl", "statistics", "RunnerSetting")
	id := jsonID(set.body["id"])
	ss := svc + "_apis/runtime/runnerscalesets/" + id

	sess := raw(t, "POST", ss+"/sessions"+v, admin, map[string]string{"ownerName": "host"}, nil)
	wantKeys(t, "session", sess.body, "sessionId", "ownerName", "runnerScaleSet", "messageQueueUrl", "messageQueueAccessToken", "statistics")
	wantKeys(t, "statistics", sess.body["statistics"].(map[string]any), "totalAvailableJobs", "totalAcquiredJobs",
		"totalAssignedJobs", "totalRunningJobs", "totalRegisteredRunners", "totalBusyRunners", "totalIdleRunners")
	if again := raw(t, "POST", ss+"/sessions"+v, admin, map[string]string{"ownerName": "other"}, nil); again.status != 409 ||
		!strings.Contains(again.body["typeName"].(string), "RunnerScaleSetSessionConflictException") {
		t.Errorf("second session: %+v", again)
	}

	queue, qtok := sess.body["messageQueueUrl"].(string), "Bearer "+sess.body["messageQueueAccessToken"].(string)
	if got := raw(t, "GET", queue, qtok, nil, nil); got.status != 400 {
		t.Errorf("poll without X-ScaleSetMaxCapacity: %d, want 400", got.status)
	}
	capacity := map[string]string{"X-ScaleSetMaxCapacity": "2", "Accept": "application/json; api-version=6.0-preview"}
	if got := raw(t, "GET", queue, qtok, nil, capacity); got.status != 202 {
		t.Errorf("empty poll: %d, want 202", got.status)
	}
	if got := raw(t, "GET", queue, "Bearer nope", nil, capacity); got.status != 401 {
		t.Errorf("poll with a bad token: %d, want 401", got.status)
	}
	s.QueueJob(int64(set.body["id"].(float64)), JobSpec{Repository: "octo-org/app"})
	msg := raw(t, "GET", queue, qtok, nil, capacity)
	wantKeys(t, "message", msg.body, "messageId", "messageType", "body", "statistics")
	if msg.body["messageType"] != "RunnerScaleSetJobMessages" {
		t.Errorf("messageType %v", msg.body["messageType"])
	}
	var events []map[string]any
	if err := json.Unmarshal([]byte(msg.body["body"].(string)), &events); err != nil || len(events) != 1 {
		t.Fatalf("body is not a JSON array in a string: %v %v", err, msg.body["body"])
	}
	wantKeys(t, "job message", events[0], "messageType", "runnerRequestId", "repositoryName", "ownerName", "jobId",
		"jobWorkflowRef", "jobDisplayName", "workflowRunId", "eventName", "requestLabels", "queueTime",
		"scaleSetAssignTime", "runnerAssignTime", "finishTime")
	if got := raw(t, "DELETE", queue+"/"+jsonID(msg.body["messageId"]), qtok, nil, nil); got.status != 204 {
		t.Errorf("ack: %d, want 204", got.status)
	}

	jit := raw(t, "POST", ss+"/generatejitconfig"+v, admin, map[string]string{"name": "r1", "workFolder": "_work"}, nil)
	wantKeys(t, "jit", jit.body, "runner", "encodedJITConfig")
	wantKeys(t, "jit runner", jit.body["runner"].(map[string]any), "id", "name", "runnerScaleSetId")
	agents := svc + "_apis/distributedtask/pools/0/agents/"
	rid := jsonID(jit.body["runner"].(map[string]any)["id"])
	if got := raw(t, "DELETE", agents+rid+v, admin, nil, nil); got.status != 204 {
		t.Errorf("remove runner: %d, want 204", got.status)
	}
	if got := raw(t, "DELETE", ss+"/sessions/"+sess.body["sessionId"].(string)+v, admin, nil, nil); got.status != 204 {
		t.Errorf("delete session: %d, want 204", got.status)
	}
	if got := raw(t, "DELETE", ss+v, admin, nil, nil); got.status != 204 {
		t.Errorf("delete scale set: %d, want 204", got.status)
	}
	ops := []Op{}
	for _, c := range s.Calls() {
		ops = append(ops, c.Op)
	}
	if !slices.Contains(ops, OpGetMessage) || !slices.Contains(ops, OpRemoveRunner) {
		t.Errorf("calls not recorded: %v", ops)
	}
}

func jsonID(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
