package githubtest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
)

// JIT label limits from GitHub's description (minItems/maxItems).
const (
	minJITLabels = 1
	maxJITLabels = 100
)

// jitRequestJSON is generate-jitconfig's body; pointers tell a missing
// field from a zero one.
type jitRequestJSON struct {
	Name          *string   `json:"name"`
	RunnerGroupID *int64    `json:"runner_group_id"`
	Labels        *[]string `json:"labels"`
	WorkFolder    *string   `json:"work_folder"`
}

type jitConfigJSON struct {
	Runner           runnerJSON `json:"runner"`
	EncodedJITConfig string     `json:"encoded_jit_config"`
}

func conflictMessage(name string) string {
	return "Already exists - A runner with the name " + name + " already exists."
}

// jitRequestName is the runner name a JIT request asked for, or "".
func jitRequestName(body []byte) string {
	var in jitRequestJSON
	if json.Unmarshal(body, &in) != nil || in.Name == nil {
		return ""
	}
	return *in.Name
}

// handleGenerateJITConfig registers a JIT runner: 201 with the runner and
// its encoded config; 409 when the name is taken at the owner; 404 for an
// unknown runner group; 422 for a body GitHub's schema rejects.
func (s *Server) handleGenerateJITConfig(req *request) reply {
	docs := req.route.docs
	var in jitRequestJSON
	dec := json.NewDecoder(bytes.NewReader(req.body))
	if err := dec.Decode(&in); err != nil {
		// GitHub: malformed JSON is 400; well-formed JSON of the wrong
		// shape fails schema validation, 422.
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return validationReply(fmt.Sprintf("Invalid request.\n\nFor 'properties/%s', %s is not %s.", typeErr.Field, typeErr.Value, jsonTypeName(typeErr.Type.Kind())), docs)
		}
		return jsonReply(http.StatusBadRequest, basicError{Message: "Problems parsing JSON", DocumentationURL: docs, Status: "400"})
	}
	switch {
	case in.Name == nil:
		return validationReply(`Invalid request.`+"\n\n"+`"name" wasn't supplied.`, docs)
	case in.RunnerGroupID == nil:
		return validationReply(`Invalid request.`+"\n\n"+`"runner_group_id" wasn't supplied.`, docs)
	case in.Labels == nil:
		return validationReply(`Invalid request.`+"\n\n"+`"labels" wasn't supplied.`, docs)
	case strings.TrimSpace(*in.Name) == "":
		// The description sets no minLength; a blank name is refused here
		// on the assumption that GitHub, which needs a name to show, does
		// too. runfleet never sends one.
		return validationReply("Invalid request.\n\nName can't be blank.", docs)
	case len(*in.Labels) < minJITLabels:
		return validationReply("Invalid request.\n\nFor 'properties/labels', [] has fewer items than 1.", docs)
	case len(*in.Labels) > maxJITLabels:
		return validationReply("Invalid request.\n\nFor 'properties/labels', the array has more items than 100.", docs)
	}

	o := s.owner(req)
	groupID := *in.RunnerGroupID
	if o.kind == kindRepo {
		// Repositories have no runner groups: their runners always land in
		// the default group, whatever id was sent.
		groupID = DefaultRunnerGroupID
	} else if _, ok := o.group(groupID); !ok {
		return errorReply(http.StatusNotFound, "Not Found", docs)
	}
	if s.runnerAt(o.key, *in.Name) != nil {
		return errorReply(http.StatusConflict, conflictMessage(*in.Name), docs)
	}

	r := &Runner{
		ID: s.newRunnerID(), Owner: o.key, Name: *in.Name, OS: "unknown", Status: StatusOffline,
		Labels: append([]string(nil), *in.Labels...), GroupID: groupID, Ephemeral: true,
	}
	r.EncodedJITConfig = encodeJITConfig(r, o, in.WorkFolder)
	s.runners[r.ID] = r
	s.jitConfigs[r.EncodedJITConfig] = r.ID
	return jsonReply(http.StatusCreated, jitConfigJSON{Runner: s.runnerJSON(r), EncodedJITConfig: r.EncodedJITConfig})
}

// encodeJITConfig makes a config in GitHub's shape — standard base64 of a
// JSON object whose keys are the files the runner keeps in its root
// (".runner", ".credentials", ".credentials_rsaparams") and whose values
// are the files' contents, base64 again — with random secrets, so no two
// match. .runner is indented and camel-cased as the runner writes it.
func encodeJITConfig(r *Runner, o *owner, workFolder *string) string {
	folder := "_work"
	if workFolder != nil && *workFolder != "" {
		folder = *workFolder
	}
	runnerFile, _ := json.MarshalIndent(map[string]any{
		"agentId": r.ID, "agentName": r.Name, "poolId": r.GroupID, "poolName": DefaultRunnerGroupName,
		"serverUrl": "https://pipelines.actions.githubusercontent.com/" + randomAlnum(40),
		"gitHubUrl": o.htmlURL(), "workFolder": folder, "ephemeral": true,
	}, "", "  ")
	credentials, _ := json.MarshalIndent(map[string]any{
		"scheme": "OAuth",
		"data": map[string]string{
			"clientId":                randomAlnum(32),
			"authorizationUrl":        "https://vstoken.actions.githubusercontent.com/_apis/oauth2/token/" + randomAlnum(32),
			"requireFipsCryptography": "False",
		},
	}, "", "  ")
	member := func(n int) string { return base64.StdEncoding.EncodeToString([]byte(randomAlnum(n))) }
	rsaParams, _ := json.Marshal(map[string]string{
		"d": member(256), "dp": member(128), "dq": member(128), "exponent": "AQAB",
		"inverseQ": member(128), "modulus": member(256), "p": member(128), "q": member(128),
	})
	files, _ := json.Marshal(map[string]string{
		".runner":                base64.StdEncoding.EncodeToString(runnerFile),
		".credentials":           base64.StdEncoding.EncodeToString(credentials),
		".credentials_rsaparams": base64.StdEncoding.EncodeToString(rsaParams),
	})
	return base64.StdEncoding.EncodeToString(files)
}

func jsonTypeName(k reflect.Kind) string {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Slice, reflect.Array:
		return "an array"
	default:
		return "a string"
	}
}
