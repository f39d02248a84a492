package infra

import (
	"errors"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/runfleet/runfleet/internal/config"
)

// Every alarm notifies the topic the parameters choose, both ways (ALARM
// and back to OK): AlarmTopicArn when set, else the topic created for
// AlarmEmail, else nothing. An alarm nobody hears about is a dashboard tile.
func TestEveryAlarmNotifiesTheChosenTopic(t *testing.T) {
	tpl := loadTemplate(t)
	if got := tpl.resource("AlarmTopic").get("Condition").str(); got != "CreateAlarmTopic" {
		t.Fatalf("AlarmTopic has condition %q, want CreateAlarmTopic", got)
	}
	cases := []struct {
		name   string
		params map[string]string
		want   string // the !Ref the actions resolve to; "" = no actions
	}{
		{"topic given", map[string]string{"AlarmTopicArn": "arn:aws:sns:eu-west-1:123456789012:ops", "AlarmEmail": "ops@example.com"}, "AlarmTopicArn"},
		{"email given", map[string]string{"AlarmTopicArn": "", "AlarmEmail": "ops@example.com"}, "AlarmTopic"},
		{"neither", map[string]string{"AlarmTopicArn": "", "AlarmEmail": ""}, ""},
	}
	alarms := tpl.resourcesOfType("AWS::CloudWatch::Alarm")
	if len(alarms) == 0 {
		t.Fatal("template.yaml has no alarms")
	}
	for _, id := range sortedKeys(alarms) {
		props := alarms[id].get("Properties")
		for _, key := range []string{"AlarmActions", "OKActions"} {
			for _, c := range cases {
				if got := alarmTarget(t, tpl, props.get(key), c.params); got != c.want {
					t.Errorf("%s %s with %s notifies %q, want %q", id, key, c.name, got, c.want)
				}
			}
		}
	}
}

// alarmTarget resolves an alarm's actions for the given parameters to the
// one !Ref they notify, "" for none. Anything but !If [cond, [one target],
// !Ref AWS::NoValue] with a target that is a !Ref or an !If of !Refs fails.
func alarmTarget(tb testing.TB, tpl template, actions value, params map[string]string) string {
	tb.Helper()
	if actions.v == nil {
		tb.Errorf("actions missing")
		return "<missing>"
	}
	cond, then, otherwise := ifBranches(tb, actions)
	if otherwise.ref() != "AWS::NoValue" {
		tb.Errorf("actions %s: without %s they must be !Ref AWS::NoValue", asJSON(actions.v), cond)
	}
	if !tpl.condition(tb, cond, params) {
		return ""
	}
	targets := then.list()
	if len(targets) != 1 {
		tb.Errorf("actions %s: want exactly one target", asJSON(actions.v))
		return "<several>"
	}
	target := value{targets[0]}
	for target.ref() == "" {
		c, yes, no := ifBranches(tb, target)
		if tpl.condition(tb, c, params) {
			target = yes
		} else {
			target = no
		}
	}
	return target.ref()
}

// An alarm on the namespace runfleet watches a metric the functions
// publish, under a dimension set they publish it with, for this stack's
// controller: anything else has no data and never fires.
func TestAlarmsWatchPublishedMetrics(t *testing.T) {
	tpl := loadTemplate(t)
	alarms := tpl.resourcesOfType("AWS::CloudWatch::Alarm")
	watched := 0
	for _, id := range sortedKeys(alarms) {
		for _, m := range alarmMetrics(t, alarms[id].get("Properties")) {
			if m.namespace != metricsNamespace {
				continue
			}
			watched++
			if _, known := emittedDimensionSets[m.name]; !known {
				t.Errorf("%s watches %s, which the functions do not publish (known: %v)", id, m.name, sortedKeys(emittedDimensionSets))
				continue
			}
			if !isEmittedSet(m.name, sortedKeys(m.dims)) {
				t.Errorf("%s watches %s by %v; it is published by %s", id, m.name, sortedKeys(m.dims), emittedSetsString(m.name))
			}
			if m.query {
				continue
			}
			if got := m.dims["controller_id"].ref(); got != "ControllerId" {
				t.Errorf("%s: %s dimension controller_id = %s, want !Ref ControllerId", id, m.name, asJSON(m.dims["controller_id"].v))
			}
		}
	}
	if watched == 0 {
		t.Fatal("no alarm watches a runfleet metric")
	}
}

// watchedMetric is one metric an alarm reads: a plain metric, a MetricStat
// of a metric math alarm, or the table of a Metrics Insights query (query
// set, dims holding only names).
type watchedMetric struct {
	namespace, name string
	dims            map[string]value
	query           bool
}

var insightsQuery = regexp.MustCompile(`^SELECT [A-Z]+\((\w+)\) FROM SCHEMA\("([^"]+)"((?:, *\w+)*)\)$`)

func alarmMetrics(tb testing.TB, props value) []watchedMetric {
	tb.Helper()
	dims := func(list value) map[string]value {
		out := map[string]value{}
		for _, d := range list.list() {
			out[value{d}.get("Name").str()] = value{d}.get("Value")
		}
		return out
	}
	if name := props.get("MetricName").str(); name != "" {
		return []watchedMetric{{namespace: props.get("Namespace").str(), name: name, dims: dims(props.get("Dimensions"))}}
	}
	var out []watchedMetric
	for _, q := range props.get("Metrics").list() {
		q := value{q}
		if metric := q.get("MetricStat").get("Metric"); metric.v != nil {
			out = append(out, watchedMetric{namespace: metric.get("Namespace").str(), name: metric.get("MetricName").str(), dims: dims(metric.get("Dimensions"))})
			continue
		}
		expr := q.get("Expression").str()
		if !strings.HasPrefix(strings.ToUpper(expr), "SELECT ") {
			continue // metric math over the ids above
		}
		m := insightsQuery.FindStringSubmatch(expr)
		if m == nil {
			tb.Errorf("cannot read the Metrics Insights query %q", expr)
			continue
		}
		wm := watchedMetric{namespace: m[2], name: m[1], dims: map[string]value{}, query: true}
		for _, d := range strings.Split(m[3], ",") {
			if d = strings.TrimSpace(d); d != "" {
				wm.dims[d] = value{}
			}
		}
		out = append(out, wm)
	}
	return out
}

// The alarms issues #10 and #20 ask for, each as the runbook describes it.
func TestFleetAlarms(t *testing.T) {
	tpl := loadTemplate(t)
	params := tpl.get("Parameters")
	type want struct {
		stat, comparison, missing string
		threshold                 any // a number, or the parameter it is a !Ref of
		window                    float64
		dims                      map[string]string // literal dimension values besides controller_id
	}
	for id, w := range map[string]want{
		"JobQueueTimeAlarm":           {"p95", "GreaterThanThreshold", "notBreaching", "QueueTimeAlarmSeconds", 900, map[string]string{"stage": "started"}},
		"JobsWaitingForCapacityAlarm": {"Maximum", "GreaterThanThreshold", "notBreaching", 0, 600, nil},
		"InstancesStuckAlarm":         {"Maximum", "GreaterThanThreshold", "notBreaching", 0, 900, nil},
		"ReconcilerNotRunningAlarm":   {"SampleCount", "LessThanThreshold", "breaching", 1, 0, nil},
		// A Sum, not a SampleCount: every invocation with a scale-set pool
		// puts a 0 on the rollup, so that silence is data.
		"ListenerNotPollingAlarm": {"Sum", "LessThanThreshold", "notBreaching", 1, 300, nil},
	} {
		props := tpl.resource(id).get("Properties")
		if props.v == nil {
			t.Errorf("%s is missing", id)
			continue
		}
		stat := props.get("Statistic").str() + props.get("ExtendedStatistic").str()
		if stat != w.stat || props.get("ComparisonOperator").str() != w.comparison || props.get("TreatMissingData").str() != w.missing {
			t.Errorf("%s: statistic %q, %s, missing data %s; want %q, %s, %s", id, stat,
				props.get("ComparisonOperator").str(), props.get("TreatMissingData").str(), w.stat, w.comparison, w.missing)
		}
		switch th := w.threshold.(type) {
		case string:
			if got := props.get("Threshold").ref(); got != th {
				t.Errorf("%s Threshold = %s, want !Ref %s", id, asJSON(props.get("Threshold").v), th)
			}
		case int:
			if got := props.get("Threshold").num(t); got != float64(th) {
				t.Errorf("%s Threshold = %v, want %d", id, got, th)
			}
		}
		// "For N minutes": every period of the window must breach.
		if w.window > 0 {
			period, n := props.get("Period").num(t), props.get("EvaluationPeriods").num(t)
			if period*n != w.window || props.get("DatapointsToAlarm").num(t) < n-1 {
				t.Errorf("%s evaluates %v × %vs (%v to alarm), want %vs", id, n, period, props.get("DatapointsToAlarm").v, w.window)
			}
		}
		m := alarmMetrics(t, props)[0]
		for name, v := range w.dims {
			if got := m.dims[name].str(); got != v {
				t.Errorf("%s dimension %s = %q, want %q", id, name, got, v)
			}
		}
		if len(m.dims) != len(w.dims)+1 {
			t.Errorf("%s dimensions %v, want controller_id and %v", id, sortedKeys(m.dims), sortedKeys(w.dims))
		}
	}

	// Not running: every minute of ReconcilerSilenceAlarmMinutes without a
	// pass; the default covers three default schedule intervals.
	silent := tpl.resource("ReconcilerNotRunningAlarm").get("Properties")
	if silent.get("Period").num(t) != 60 || silent.get("EvaluationPeriods").ref() != "ReconcilerSilenceAlarmMinutes" ||
		silent.get("DatapointsToAlarm").ref() != "ReconcilerSilenceAlarmMinutes" {
		t.Errorf("ReconcilerNotRunningAlarm %s, want Period 60 and EvaluationPeriods = DatapointsToAlarm = !Ref ReconcilerSilenceAlarmMinutes", asJSON(silent.v))
	}
	interval := scheduleMinutes(t, params.get("ReconcileSchedule").get("Default").str())
	if d := params.get("ReconcilerSilenceAlarmMinutes").get("Default").num(t); d < 3*interval {
		t.Errorf("ReconcilerSilenceAlarmMinutes default %v, want at least 3 × the default schedule's %v minutes", d, interval)
	}
	if max := params.get("ReconcilerSilenceAlarmMinutes").get("MaxValue").num(t); max*60 > 86400 {
		t.Errorf("ReconcilerSilenceAlarmMinutes MaxValue %v: CloudWatch evaluates at most one day", max)
	}
}

// scheduleMinutes is the interval of an EventBridge rate expression.
func scheduleMinutes(tb testing.TB, expr string) float64 {
	tb.Helper()
	m := regexp.MustCompile(`^rate\((\d+) (minute|minutes|hour|hours)\)$`).FindStringSubmatch(expr)
	if m == nil {
		tb.Fatalf("cannot read the schedule %q", expr)
	}
	n, _ := strconv.Atoi(m[1])
	if strings.HasPrefix(m[2], "hour") {
		n *= 60
	}
	return float64(n)
}

// The failure ratio is failures over all operations of the window, from
// the counter's [controller_id, result] set, with a window of only failures
// counting as 1 and one without operations as 0.
func TestProviderFailureRatioAlarm(t *testing.T) {
	tpl := loadTemplate(t)
	props := tpl.resource("ProviderFailureRatioAlarm").get("Properties")
	results := map[string]string{} // query id -> result dimension
	var returned []string
	exprs := map[string]string{}
	for _, q := range props.get("Metrics").list() {
		q := value{q}
		id := q.get("Id").str()
		if q.get("ReturnData").v == true {
			returned = append(returned, id)
		}
		if stat := q.get("MetricStat"); stat.v != nil {
			if stat.get("Stat").str() != "Sum" {
				t.Errorf("query %s uses %s, want Sum", id, stat.get("Stat").str())
			}
			for _, d := range stat.get("Metric").get("Dimensions").list() {
				dim := value{d}
				if dim.get("Name").str() == "result" {
					results[id] = dim.get("Value").str()
				}
			}
			continue
		}
		exprs[id] = q.get("Expression").str()
	}
	if len(returned) != 1 {
		t.Fatalf("ProviderFailureRatioAlarm returns %v, want one series", returned)
	}
	var failed, succeeded string
	for id, r := range results {
		switch r {
		case "error":
			failed = id
		case "ok":
			succeeded = id
		}
	}
	if failed == "" || succeeded == "" || len(results) != 2 {
		t.Fatalf("ProviderFailureRatioAlarm reads results %v, want one error and one ok query", results)
	}
	// Evaluate the expression on the three windows that matter.
	for _, c := range []struct {
		failed, succeeded *float64
		want              float64
	}{
		{ptr(1), ptr(3), 0.25},
		{ptr(2), nil, 1},
		{nil, ptr(5), 0},
		{nil, nil, 0},
	} {
		got, err := evalMetricMath(exprs, returned[0], map[string]*float64{failed: c.failed, succeeded: c.succeeded})
		if err != nil {
			t.Fatalf("ProviderFailureRatioAlarm: %v", err)
		}
		if got != c.want {
			t.Errorf("failed %v, succeeded %v: share %v, want %v", deref(c.failed), deref(c.succeeded), got, c.want)
		}
	}
	if got := props.get("Threshold").ref(); got != "ProviderFailureRatioAlarmThreshold" {
		t.Errorf("Threshold = %s, want !Ref ProviderFailureRatioAlarmThreshold", asJSON(props.get("Threshold").v))
	}
	if d := tpl.get("Parameters").get("ProviderFailureRatioAlarmThreshold").get("Default").num(t); d != 0.25 {
		t.Errorf("ProviderFailureRatioAlarmThreshold default %v, want 0.25", d)
	}
}

func ptr(f float64) *float64 { return &f }

func deref(f *float64) any {
	if f == nil {
		return "missing"
	}
	return *f
}

// The rate-limit alarm takes the lowest remaining budget of any
// installation, whose ids the template does not know, with a Metrics
// Insights query over the published [controller_id, installation] set.
func TestGitHubRateLimitAlarmWatchesTheEmittedMetric(t *testing.T) {
	tpl := loadTemplate(t)
	props := tpl.resource("GitHubRateLimitAlarm").get("Properties")
	queries := props.get("Metrics").list()
	if len(queries) != 1 {
		t.Fatalf("GitHubRateLimitAlarm Metrics = %s, want one query", asJSON(props.get("Metrics").v))
	}
	q := value{queries[0]}
	want := `SELECT MIN(runfleet_github_rate_limit_remaining) FROM SCHEMA("` + metricsNamespace + `", controller_id, installation)`
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
}

// The stack cannot read the controller id out of the config, so it is a
// parameter; left at its default, it must be the default config's, or a
// first deploy's fleet alarms would watch nothing.
func TestControllerIdParameterMatchesTheDefaultConfig(t *testing.T) {
	tpl := loadTemplate(t)
	param := tpl.get("Parameters").get("ControllerId")
	secrets := map[string]string{"RUNFLEET_WEBHOOK_SECRET": "a-webhook-secret"}
	lookup := func(name string) (string, bool) { v, ok := secrets[name]; return v, ok }
	noFiles := func(string) ([]byte, error) { return nil, errors.New("no files on Lambda") }
	cfg, err := config.Parse([]byte(tpl.get("Parameters").get("RunfleetConfig").get("Default").str()), lookup, noFiles)
	if err != nil {
		t.Fatalf("RunfleetConfig default: %v", err)
	}
	if got := param.get("Default").str(); got != cfg.ControllerID {
		t.Errorf("ControllerId default %q, want the default config's controller_id %q", got, cfg.ControllerID)
	}
	pattern := regexp.MustCompile(param.get("AllowedPattern").str())
	for id, ok := range map[string]bool{cfg.ControllerID: true, "acme-prod": true, "Acme": false, "-x": false, "": false, strings.Repeat("a", 65): false} {
		if pattern.MatchString(id) != ok {
			t.Errorf("ControllerId AllowedPattern accepts %q: %v, want %v (as config validation)", id, !ok, ok)
		}
	}
}

// The vocabulary's dimension sets are sorted and all carry controller_id,
// which isEmittedSet relies on.
func TestVocabularyIsWellFormed(t *testing.T) {
	for name, sets := range emittedDimensionSets {
		if !slices.ContainsFunc(sets, func(s []string) bool { return slices.Equal(s, []string{"controller_id"}) }) {
			t.Errorf("%s has no [controller_id] rollup", name)
		}
		for _, s := range sets {
			if !sort.StringsAreSorted(s) || !slices.Contains(s, "controller_id") {
				t.Errorf("%s set %v: want sorted, with controller_id", name, s)
			}
		}
	}
}
