package infra

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/runfleet/runfleet/internal/metrics"
)

const (
	alertRulesPath     = "../deploy/prometheus/runfleet-alerts.yaml"
	alertRulesTestPath = "../deploy/prometheus/runfleet-alerts.test.yaml"
)

// promAlert is one alerting rule of the embedded mode's rules file.
type promAlert struct {
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	Annotations map[string]string `yaml:"annotations"`
}

func prometheusAlerts(t *testing.T) map[string]promAlert {
	t.Helper()
	data, err := os.ReadFile(alertRulesPath)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []struct {
			Rules []promAlert `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(data, &file); err != nil {
		t.Fatalf("%s: %v", alertRulesPath, err)
	}
	alerts := map[string]promAlert{}
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			alerts[r.Alert] = r
		}
	}
	return alerts
}

var metricName = regexp.MustCompile(`\brunfleet_[a-z_]+`)

// The embedded mode's alerts are the stack's fleet alarms in PromQL: each
// fleet alarm (every alarm but those on AWS's own metrics: Lambda's errors,
// throttles and invocations, the SQS queue's age) has an alert of the same
// name, every metric an alert reads is one /metrics exposes, and every
// alert links its runbook entry.
func TestPrometheusAlertsMirrorTheFleetAlarms(t *testing.T) {
	alerts := prometheusAlerts(t)
	tpl := loadTemplate(t)
	alarms := tpl.resourcesOfType("AWS::CloudWatch::Alarm")
	for _, id := range sortedKeys(alarms) {
		lambdaOnly := true
		for _, m := range alarmMetrics(t, alarms[id].get("Properties")) {
			lambdaOnly = lambdaOnly && strings.HasPrefix(m.namespace, "AWS/")
		}
		if _, ok := alerts[id]; !ok && !lambdaOnly {
			t.Errorf("alarm %s has no Prometheus alert of the same name in %s", id, alertRulesPath)
		}
	}
	entries, _ := runbookEntries(t)
	for name, a := range alerts {
		for _, m := range metricName.FindAllString(a.Expr, -1) {
			family := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m, "_bucket"), "_sum"), "_count")
			if _, ok := metrics.FamilyByName(family); !ok {
				t.Errorf("alert %s reads %s, which /metrics does not expose (internal/metrics/names.go)", name, m)
			}
		}
		if url := a.Annotations["runbook_url"]; !strings.HasSuffix(url, "docs/runbook.md#"+strings.ToLower(name)) {
			t.Errorf("alert %s: runbook_url %q does not link to its entry", name, url)
		}
		if !slices.ContainsFunc(entries, func(e runbookEntry) bool { return e.id == name }) {
			t.Errorf("alert %s has no entry \"## %s\" in docs/runbook.md", name, name)
		}
	}
}

// promtool (Debian's prometheus package; `make lint` installs it) accepts
// the rules and their unit tests pass: each alert fires on its condition
// and stays quiet on a healthy fleet.
func TestPrometheusAlertsPassPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (apt-get install prometheus); make lint runs it")
	}
	for _, args := range [][]string{{"check", "rules", alertRulesPath}, {"test", "rules", alertRulesTestPath}} {
		if out, err := exec.Command(promtool, args...).CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
