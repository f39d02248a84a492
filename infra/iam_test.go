package infra

import (
	"slices"
	"strings"
	"testing"
)

// The DynamoDB actions each role needs follow from the store calls its
// function's code path makes (internal/store/dynamodb):
//
//   - GetItem: GetInstance, GetJob, PoolUsage, InstallationID, GetRunnerCredentials,
//     GetCursor (the reconciler's webhook delivery log position), GetBudget
//
//   - PutItem: instance, job, spot breaker, lease, cursor and budget
//     compare-and-sets (a lease's acquire, renew and release, and
//     ChangeBudget — every GitHub call of the worker, reconciler and
//     operator's delete — are each a GetItem and a conditional PutItem),
//     InstallationID's first write,
//     PutRunnerCredentials, and the Puts of TransactWriteItems
//
//   - UpdateItem: the pool counter's Update in TransactWriteItems
//     (CreateInstance reserves a slot, a move to deleted releases it)
//
//   - DeleteItem: DeleteRunnerCredentials
//
//   - Query (live_sharded) and BatchGetItem: ListLiveInstances,
//     ListInstancesByPool, ListOpenJobs
//
//   - Query (live) and UpdateItem: MigrateLegacyLive, the reconciler's
//     one-off move of instances written before live_sharded existed
//
// No store call uses a ConditionCheck or Scan, and only the reconciler's
// MigrateLegacyLive reads the legacy "live" index.
// A role granted more than this fails here: widen it together with the
// code that needs it.
var tableActions = map[string][]string{
	// Intake: jobs, admissions (a transaction), moves to deleted.
	"WebhookRole": {"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"},
	// create, delete, serve_job and rerun_job messages, runner
	// credentials; an EC2 interruption event lists live instances to find
	// the one on the interrupted machine.
	"WorkerRole": {"dynamodb:BatchGetItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem"},
	// An operator's delete: read, compare-and-set to a pending delete.
	"ForceDeleteRole": {"dynamodb:GetItem", "dynamodb:PutItem"},
	// Reconcile lists live instances and open jobs, and repairs as the worker;
	// it reads and moves the delivery log cursor (GetItem, PutItem).
	"ReconcilerRole": {"dynamodb:BatchGetItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem"},
	// The scale-set listener: admissions as intake's, open jobs for the
	// statistics check (the live_sharded index, then BatchGetItem), its
	// lease and session cursor (GetItem, PutItem).
	"ListenerRole": {"dynamodb:BatchGetItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem"},
	// Runner bootstrap: instances and credentials only (metadata_test.go).
	"MetadataRole": {"dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem"},
}

func TestRolesGrantOnlyTheTableActionsTheirCodeCalls(t *testing.T) {
	tpl := loadTemplate(t)
	if got, want := sortedKeys(tpl.resourcesOfType("AWS::IAM::Role")), sortedKeys(tableActions); !slices.Equal(got, want) {
		t.Fatalf("roles %v, want %v", got, want)
	}
	for role, want := range tableActions {
		var got []string
		for _, policy := range tpl.resource(role).get("Properties").get("Policies").list() {
			walkStatements(value{policy}.get("PolicyDocument").get("Statement"), func(st value) {
				if isCacheIndexStatement(st) {
					return // cacheindex_test.go
				}
				actions := append(st.get("Action").strs(), st.get("Action").str())
				for _, a := range actions {
					if !strings.HasPrefix(a, "dynamodb:") {
						continue
					}
					got = append(got, a)
					checkTableResource(t, role, a, st.get("Resource"))
				}
			})
		}
		slices.Sort(got)
		got = slices.Compact(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s allows %v on the table, its code calls %v", role, got, want)
		}
	}
}

// checkTableResource: Query is allowed on the live_sharded index only, every
// other action on the table only.
func checkTableResource(t *testing.T, role, action string, resource value) {
	t.Helper()
	resources := resource.list()
	if resource.v != nil && resources == nil {
		resources = []any{resource.v}
	}
	for _, r := range resources {
		r := value{r}
		switch {
		case action == "dynamodb:Query":
			legacyMove := role == "ReconcilerRole" && r.sub() == "${StateTable.Arn}/index/live"
			if r.sub() != "${StateTable.Arn}/index/live_sharded" && !legacyMove {
				t.Errorf("%s allows Query on %s, want only the live_sharded index (and, for the reconciler's MigrateLegacyLive, live)", role, asJSON(r.v))
			}
		case r.getAtt() != "StateTable":
			t.Errorf("%s allows %s on %s, want only the table", role, action, asJSON(r.v))
		}
	}
}
