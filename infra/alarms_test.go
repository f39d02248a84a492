package infra

import (
	"reflect"
	"strings"
	"testing"

	"github.com/runfleet/runfleet/internal/metrics"
	"github.com/runfleet/runfleet/internal/telemetry"
)

// Every alarm notifies the same place: whatever DeadLetterAlarm notifies.
func TestAlarmsShareTheirActions(t *testing.T) {
	tpl := loadTemplate(t)
	want := tpl.resource("DeadLetterAlarm").get("Properties").get("AlarmActions").v
	if want == nil {
		t.Fatal("DeadLetterAlarm has no AlarmActions")
	}
	for id := range tpl.resourcesOfType("AWS::CloudWatch::Alarm") {
		if got := tpl.resource(id).get("Properties").get("AlarmActions").v; !reflect.DeepEqual(got, want) {
			t.Errorf("%s AlarmActions = %s, want %s", id, asJSON(got), asJSON(want))
		}
	}
}

// The rate-limit alarm watches the metric, namespace and dimensions the
// Lambda functions print as EMF (internal/metrics, emf.go): a rename on
// either side would leave it silently without data, which it treats as OK.
func TestGitHubRateLimitAlarmWatchesTheEmittedMetric(t *testing.T) {
	tpl := loadTemplate(t)
	props := tpl.resource("GitHubRateLimitAlarm").get("Properties")
	queries := props.get("Metrics").list()
	if len(queries) != 1 {
		t.Fatalf("GitHubRateLimitAlarm Metrics = %s, want one query", asJSON(props.get("Metrics").v))
	}
	q := value{queries[0]}
	want := `SELECT MIN(` + metrics.GitHubRateLimitRemaining + `) FROM SCHEMA("` + telemetry.Namespace + `", ` +
		metrics.LabelControllerID + `, ` + metrics.LabelInstallation + `)`
	if got := q.get("Expression").str(); got != want {
		t.Errorf("GitHubRateLimitAlarm expression %q, want %q", got, want)
	}
	if q.get("Period").num(t) != 300 || q.get("ReturnData").v != true {
		t.Errorf("GitHubRateLimitAlarm query %s, want Period 300 and ReturnData true", asJSON(q.v))
	}
	if got := props.get("Threshold").ref(); got != "GitHubRateLimitAlarmThreshold" {
		t.Errorf("Threshold = %s, want !Ref GitHubRateLimitAlarmThreshold", asJSON(props.get("Threshold").v))
	}
	if props.get("ComparisonOperator").str() != "LessThanThreshold" || props.get("TreatMissingData").str() != "notBreaching" {
		t.Errorf("GitHubRateLimitAlarm %s, want LessThanThreshold and notBreaching", asJSON(props.v))
	}
	if d := tpl.get("Parameters").get("GitHubRateLimitAlarmThreshold").get("Default"); d.num(t) != 500 {
		t.Errorf("GitHubRateLimitAlarmThreshold default %v, want 500", d.v)
	}
	if !strings.Contains(props.get("AlarmDescription").str(), "docs/deploy.md") {
		t.Error("GitHubRateLimitAlarm description should point at docs/deploy.md")
	}
}
