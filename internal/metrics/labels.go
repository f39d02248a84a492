package metrics

import (
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/runner"
)

// Every label takes its values from a closed set, so a caller (or a
// forged webhook header) can never grow the number of series; a value
// outside the set is recorded as Other.

// Other stands for any value outside a label's known set.
const Other = "other"

// None is the action of a webhook that carried none (not a workflow_job,
// or rejected before its payload was read). EMF refuses empty dimension
// values, so it is spelled out on both sides.
const None = "none"

// Webhook events and actions.
var (
	WebhookEvents  = []string{"workflow_job", "ping", Other}
	WebhookActions = []string{"queued", "waiting", "in_progress", "completed", Other, None}
)

// Webhook results: what the intake answered.
const (
	// WebhookAccepted: a workflow_job the engine handled (whatever it
	// decided: created, duplicate, no matching pool…).
	WebhookAccepted = "accepted"
	// WebhookIgnored: an event runfleet does not act on, or a ping.
	WebhookIgnored = "ignored"
	// WebhookBadSignature: 401, the signature did not verify.
	WebhookBadSignature = "bad_signature"
	// WebhookBadRequest: any other 4xx (malformed payload, missing
	// header, wrong method or content type).
	WebhookBadRequest = "bad_request"
	// WebhookTooLarge: 413, the body exceeded webhook.max_body_bytes.
	WebhookTooLarge = "too_large"
	// WebhookError: 5xx, processing failed; GitHub shows it for redelivery.
	WebhookError = "error"
)

// WebhookResults lists every webhook result.
var WebhookResults = []string{WebhookAccepted, WebhookIgnored, WebhookBadSignature, WebhookBadRequest, WebhookTooLarge, WebhookError}

// Provider operations and results.
const (
	OpCreate    = "create"
	OpDelete    = "delete"
	OpGet       = "get"
	OpList      = "list"
	OpRemoveAll = "remove_all"
	OpStart     = "start"
	OpStop      = "stop"

	ResultOK    = "ok"
	ResultError = "error"
	// ResultRateLimited: GitHub refused the call for its rate limit.
	ResultRateLimited = "rate_limited"
)

// ProviderOps and ProviderResults list the provider label values.
var (
	ProviderOps     = []string{OpCreate, OpDelete, OpGet, OpList, OpRemoveAll, OpStart, OpStop}
	ProviderResults = []string{ResultOK, ResultError}
	GitHubResults   = []string{ResultOK, ResultError, ResultRateLimited}
	PassResults     = []string{ResultOK, ResultError}
)

// Open job ages.
const (
	AgeUnderMinute  = "lt_1m"
	AgeMinutes      = "1m_to_10m"
	AgeUnderHour    = "10m_to_1h"
	AgeHourAndOlder = "ge_1h"
)

// OpenJobAges lists the age buckets of runfleet_open_jobs.
var OpenJobAges = []string{AgeUnderMinute, AgeMinutes, AgeUnderHour, AgeHourAndOlder}

// AgeOf is the age bucket of a job that has waited d.
func AgeOf(d time.Duration) string {
	switch {
	case d < time.Minute:
		return AgeUnderMinute
	case d < 10*time.Minute:
		return AgeMinutes
	case d < time.Hour:
		return AgeUnderHour
	default:
		return AgeHourAndOlder
	}
}

// Reasons of runfleet_jobs_refused_total and runfleet_capacity_failovers_total.
// A reason missing from the list is
// recorded as Other.
var (
	// RefusalReasons are the domain's shape refusals (runner.RefusalReasons).
	RefusalReasons = append(slices.Clone(runner.RefusalReasons), Other)
	// FailoverReasons are the EC2 error codes a create moves on after
	// (providers/ec2 capacityCodes; its tests keep the two lists equal).
	FailoverReasons = []string{
		"InsufficientInstanceCapacity", "InsufficientCapacity", "InsufficientHostCapacity",
		"InsufficientReservedInstanceCapacity", "InsufficientFreeAddressesInSubnet", "UnfulfillableCapacity",
		"SpotMaxPriceTooLow", "MaxSpotInstanceCountExceeded", "VcpuLimitExceeded", "Unsupported", Other,
	}
)

// ReconcileActionNames are the counters of engine.ReconcileReport, by
// their JSON names: the values of runfleet_reconcile_actions_total's
// action label. Read from the type, so a counter added to the report is a
// label value at once.
var ReconcileActionNames = reconcileActionNames()

func reconcileActionNames() []string {
	t := reflect.TypeFor[engine.ReconcileReport]()
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Type.Kind() != reflect.Int {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return names
}

// ReconcileActionCounts returns rep's counters in ReconcileActionNames
// order.
func ReconcileActionCounts(rep engine.ReconcileReport) []int {
	v := reflect.ValueOf(rep)
	t := v.Type()
	out := make([]int, 0, len(ReconcileActionNames))
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Type.Kind() != reflect.Int {
			continue
		}
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
			out = append(out, int(v.Field(i).Int()))
		}
	}
	return out
}

// Known returns value when set holds it, else Other.
func Known(set []string, value string) string {
	for _, s := range set {
		if s == value {
			return s
		}
	}
	return Other
}
