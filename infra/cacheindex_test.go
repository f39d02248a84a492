package infra

import (
	"slices"
	"strings"
	"testing"
)

// stateTable is the state table's id: the template's other table is the
// cache's index (CacheIndexTable), made only with the cache's bucket.
func (t template) stateTable(tb testing.TB) string {
	tb.Helper()
	if got := sortedKeys(t.resourcesOfType("AWS::DynamoDB::Table")); !slices.Equal(got, []string{"CacheIndexTable", "StateTable"}) {
		tb.Fatalf("template.yaml's tables are %v, want CacheIndexTable and StateTable", got)
	}
	return "StateTable"
}

// isCacheIndexStatement: a statement on the cache's index table.
func isCacheIndexStatement(st value) bool { return st.get("Resource").getAtt() == "CacheIndexTable" }

// isCacheStatement: one of the metadata function's cache statements, all
// named Cache… and conditional on the cache's bucket.
func isCacheStatement(st value) bool { return strings.HasPrefix(st.get("Sid").str(), "Cache") }

// The metadata function serves the cache with exactly what its code calls
// (internal/cache/dynamo*.go, cache.StoreLedger): the ledger's job items
// (GetItem), the index (conditional Put in a transaction, Get, Update,
// Delete, Query of one repository's scope; never Scan, which eviction
// alone needs), and the archives: one object under blobs/ or part objects
// under parts/<id>/ (the function presigns PUTs and GETs, heads, and
// deletes a replaced reservation's objects; it lists only under a parts/
// prefix, and makes no multipart upload).
// Each statement exists only with the bucket.
func TestMetadataCacheStatements(t *testing.T) {
	tpl := loadTemplate(t)
	want := map[string]struct {
		actions  []string
		resource string
	}{
		"CacheReadJobs":    {[]string{"dynamodb:GetItem"}, "StateTable"},
		"CacheIndex":       {[]string{"dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem"}, "CacheIndexTable"},
		"CacheArchives":    {[]string{"s3:DeleteObject", "s3:GetObject", "s3:PutObject"}, "${CacheBucket.Arn}/*blobs/*"},
		"CacheParts":       {[]string{"s3:DeleteObject", "s3:GetObject", "s3:PutObject"}, "${CacheBucket.Arn}/*parts/*"},
		"CacheListParts":   {[]string{"s3:ListBucket"}, "CacheBucket"},
		"CacheArchivesKey": {[]string{"kms:Decrypt", "kms:GenerateDataKey"}, "KmsKeyArn"},
	}
	conditions := map[string]string{"CacheReadJobs": "CreateCacheBucket", "CacheIndex": "CreateCacheBucket", "CacheArchives": "CreateCacheBucket",
		"CacheParts": "CreateCacheBucket", "CacheListParts": "CreateCacheBucket", "CacheArchivesKey": "CacheBucketWithKmsKey"}
	seen := map[string]bool{}
	for _, policy := range tpl.resource("MetadataRole").get("Properties").get("Policies").list() {
		for _, raw := range (value{policy}).get("PolicyDocument").get("Statement").list() {
			branches := value{raw}.get("!If").list()
			if len(branches) != 3 {
				continue
			}
			st := value{branches[1]}
			sid := st.get("Sid").str()
			w, ok := want[sid]
			if !ok {
				continue
			}
			seen[sid] = true
			if c, _ := branches[0].(string); c != conditions[sid] {
				t.Errorf("%s is conditional on %q, want %s", sid, c, conditions[sid])
			}
			actions := st.get("Action").strs()
			if a := st.get("Action").str(); a != "" {
				actions = append(actions, a)
			}
			slices.Sort(actions)
			if !slices.Equal(actions, w.actions) {
				t.Errorf("%s allows %v, want %v", sid, actions, w.actions)
			}
			if sid == "CacheListParts" {
				// Listing is of an entry's parts only, never the bucket.
				if p := st.get("Condition").get("StringLike").get("s3:prefix").strs(); !slices.Equal(p, []string{"*parts/*"}) {
					t.Errorf("CacheListParts lists prefixes %v, want *parts/* only", p)
				}
			}
			if sid == "CacheReadJobs" {
				// The ledger read is of job items only.
				if keys := st.get("Condition").get("ForAllValues:StringLike").get("dynamodb:LeadingKeys").strs(); !slices.Equal(keys, []string{"JOB#*"}) {
					t.Errorf("CacheReadJobs reaches leading keys %v, want JOB#* only", keys)
				}
			}
			r := st.get("Resource")
			if got := r.getAtt() + r.sub() + r.ref(); got != w.resource {
				t.Errorf("%s is on %q, want %q", sid, got, w.resource)
			}
		}
	}
	for sid := range want {
		if !seen[sid] {
			t.Errorf("MetadataRole has no conditional statement %s", sid)
		}
	}
	idx := tpl.resource("CacheIndexTable")
	if idx.get("Condition").str() != "CreateCacheBucket" {
		t.Error("CacheIndexTable is not conditional on CreateCacheBucket")
	}
	// The keys internal/cache's CreateDynamoTable makes (the tests' tables)
	// and its items use: string pk (hash) and sk (range), on demand.
	props := idx.get("Properties")
	var keys, attrs []string
	for _, k := range props.get("KeySchema").list() {
		keys = append(keys, value{k}.get("AttributeName").str()+" "+value{k}.get("KeyType").str())
	}
	for _, a := range props.get("AttributeDefinitions").list() {
		attrs = append(attrs, value{a}.get("AttributeName").str()+" "+value{a}.get("AttributeType").str())
	}
	if !slices.Equal(keys, []string{"pk HASH", "sk RANGE"}) || !slices.Equal(attrs, []string{"pk S", "sk S"}) || props.get("BillingMode").str() != "PAY_PER_REQUEST" {
		t.Errorf("CacheIndexTable: keys %v, attributes %v, billing %q; want pk (S, hash), sk (S, range), PAY_PER_REQUEST", keys, attrs, props.get("BillingMode").str())
	}
	if ttl := props.get("TimeToLiveSpecification"); ttl.get("AttributeName").str() != "expires" || ttl.get("Enabled").v != true {
		t.Error("CacheIndexTable's TTL is not on expires (internal/cache/dynamo.go's attrExpires)")
	}
	env := tpl.resource("MetadataFunction").get("Properties").get("Environment").get("Variables")
	for _, name := range []string{"RUNFLEET_CACHE_TABLE", "RUNFLEET_CACHE_BUCKET"} {
		if br := env.get(name).get("!If").list(); len(br) != 3 || br[0] != "CreateCacheBucket" {
			t.Errorf("MetadataFunction's %s is not set on CreateCacheBucket alone", name)
		}
	}
}
