package infra

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// dashboardWidget is one widget of the dashboard body.
type dashboardWidget struct {
	Type       string `json:"type"`
	Properties struct {
		Title   string   `json:"title"`
		Region  string   `json:"region"`
		Alarms  []string `json:"alarms"`
		Metrics [][]any  `json:"metrics"`
		Query   string   `json:"query"`
	} `json:"properties"`
}

var subRef = regexp.MustCompile(`\$\{([^}]+)\}`)

// dashboardWidgets is the stack's dashboard body with every ${...} of its
// !Sub replaced as CloudFormation would: parameters by their defaults,
// AWS::Region by "eu-west-1", a resource by "<id>" and an attribute by
// "<id>.<attr>". A reference to anything else fails.
func dashboardWidgets(t *testing.T, tpl template) []dashboardWidget {
	t.Helper()
	id := tpl.onlyResourceOfType(t, "AWS::CloudWatch::Dashboard")
	props := tpl.resource(id).get("Properties")
	if got := props.get("DashboardName").ref(); got != "AWS::StackName" {
		t.Errorf("DashboardName = %s, want !Ref AWS::StackName (one dashboard per stack)", asJSON(props.get("DashboardName").v))
	}
	body := props.get("DashboardBody").sub()
	if body == "" {
		t.Fatalf("%s DashboardBody is not a one-argument !Sub", id)
	}
	var unresolved []string
	resolved := subRef.ReplaceAllStringFunc(body, func(ref string) string {
		name := ref[2 : len(ref)-1]
		if name == "AWS::Region" {
			return "eu-west-1"
		}
		if p := tpl.get("Parameters").get(name); p.v != nil {
			return fmt.Sprint(p.get("Default").v)
		}
		res, _, _ := strings.Cut(name, ".")
		if tpl.resource(res).v != nil {
			return "<" + name + ">"
		}
		unresolved = append(unresolved, ref)
		return ref
	})
	if len(unresolved) > 0 {
		t.Errorf("the dashboard refers to %v, which are neither parameters nor resources", unresolved)
	}
	var doc struct {
		Widgets []dashboardWidget `json:"widgets"`
	}
	if err := json.Unmarshal([]byte(resolved), &doc); err != nil {
		t.Fatalf("the dashboard body is not JSON: %v\n%s", err, resolved)
	}
	if len(doc.Widgets) == 0 {
		t.Fatal("the dashboard has no widgets")
	}
	return doc.Widgets
}

// The alarm widget shows every alarm of the stack, so the dashboard is
// where an operator starts.
func TestDashboardShowsEveryAlarm(t *testing.T) {
	tpl := loadTemplate(t)
	var shown []string
	for _, w := range dashboardWidgets(t, tpl) {
		if w.Type != "alarm" {
			continue
		}
		for _, arn := range w.Properties.Alarms {
			id, ok := strings.CutSuffix(strings.Trim(arn, "<>"), ".Arn")
			if !ok {
				t.Errorf("alarm widget entry %q is not ${<alarm>.Arn}", arn)
			}
			shown = append(shown, id)
		}
	}
	slices.Sort(shown)
	// An alarm made only under a Condition (CostOverBudgetAlarm) cannot be
	// named in the dashboard's body: without it the stack would not deploy.
	alarms := tpl.resourcesOfType("AWS::CloudWatch::Alarm")
	var want []string
	for _, id := range sortedKeys(alarms) {
		if alarms[id].get("Condition").str() == "" {
			want = append(want, id)
		}
	}
	if !slices.Equal(shown, want) {
		t.Errorf("the dashboard's alarm widgets show %v, want every alarm %v", shown, want)
	}
}

var searchSchema = regexp.MustCompile(`SEARCH\('\{([^}]+)\} MetricName="(\w+)"`)

// Every graph of a runfleet metric reads a name and dimension set the
// functions publish, for this stack's controller; every graph is of this
// stack's region.
func TestDashboardGraphsPublishedMetrics(t *testing.T) {
	tpl := loadTemplate(t)
	controller := fmt.Sprint(tpl.get("Parameters").get("ControllerId").get("Default").v)
	graphed := 0
	for _, w := range dashboardWidgets(t, tpl) {
		title := w.Properties.Title
		if title == "" {
			t.Errorf("a %s widget has no title (the runbook names widgets by title)", w.Type)
		}
		if w.Type == "alarm" {
			continue
		}
		if w.Properties.Region != "eu-west-1" {
			t.Errorf("widget %q region %q, want ${AWS::Region}", title, w.Properties.Region)
		}
		for _, row := range w.Properties.Metrics {
			if expr := metricRowExpression(row); expr != "" {
				if !strings.HasPrefix(expr, "SEARCH(") {
					continue
				}
				m := searchSchema.FindStringSubmatch(expr)
				if m == nil {
					t.Errorf("widget %q: cannot read %q", title, expr)
					continue
				}
				schema := strings.Split(m[1], ",")
				if schema[0] != metricsNamespace {
					continue
				}
				graphed++
				if !isEmittedSet(m[2], schema[1:]) {
					t.Errorf("widget %q searches %s by %v; it is published by %s", title, m[2], schema[1:], emittedSetsString(m[2]))
				}
				if !strings.Contains(expr, `controller_id="`+controller+`"`) {
					t.Errorf("widget %q searches every controller's %s; want controller_id=\"${ControllerId}\"", title, m[2])
				}
				continue
			}
			ns, name, dims := metricRow(t, title, row)
			if ns != metricsNamespace {
				continue
			}
			graphed++
			if !isEmittedSet(name, sortedKeys(dims)) {
				t.Errorf("widget %q graphs %s by %v; it is published by %s", title, name, sortedKeys(dims), emittedSetsString(name))
			}
			if dims["controller_id"] != controller {
				t.Errorf("widget %q graphs %s of controller %q, want ${ControllerId}", title, name, dims["controller_id"])
			}
		}
	}
	if graphed == 0 {
		t.Fatal("the dashboard graphs no runfleet metric")
	}
}

// metricRowExpression is the expression of a row that is only an
// expression ([{"expression": ...}]), or "".
func metricRowExpression(row []any) string {
	if len(row) != 1 {
		return ""
	}
	opts, _ := row[0].(map[string]any)
	expr, _ := opts["expression"].(string)
	return expr
}

// metricRow reads [namespace, name, dim, value, ..., {options}].
func metricRow(t *testing.T, title string, row []any) (ns, name string, dims map[string]string) {
	t.Helper()
	var parts []string
	for _, p := range row {
		if s, ok := p.(string); ok {
			parts = append(parts, s)
		}
	}
	if len(parts) < 2 || len(parts)%2 != 0 {
		t.Errorf("widget %q: metric row %v is not [namespace, name, dimension, value, ...]", title, row)
		return "", "", nil
	}
	dims = map[string]string{}
	for i := 2; i < len(parts); i += 2 {
		dims[parts[i]] = parts[i+1]
	}
	return parts[0], parts[1], dims
}
