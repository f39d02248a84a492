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
		"CacheJobBindings": {[]string{"dynamodb:GetItem", "dynamodb:PutItem"}, "StateTable"},
		"CacheIndex":       {[]string{"dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem"}, "CacheIndexTable"},
		"CacheArchives":    {[]string{"s3:DeleteObject", "s3:GetObject", "s3:PutObject"}, "${CacheBucket.Arn}/*blobs/*"},
		"CacheParts":       {[]string{"s3:DeleteObject", "s3:GetObject", "s3:PutObject"}, "${CacheBucket.Arn}/*parts/*"},
		"CacheListParts":   {[]string{"s3:ListBucket"}, "CacheBucket"},
		"CacheArchivesKey": {[]string{"kms:Decrypt", "kms:GenerateDataKey"}, "KmsKeyArn"},
	}
	conditions := map[string]string{"CacheReadJobs": "CreateCacheBucket", "CacheJobBindings": "CreateCacheBucket", "CacheIndex": "CreateCacheBucket", "CacheArchives": "CreateCacheBucket",
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
			// The ledger read is of job items only; the bindings are the
			// cache-job leases only (cache.JobBindingLeasePrefix).
			if want, ok := map[string]string{"CacheReadJobs": "JOB#*", "CacheJobBindings": "LEASE#cache-job/*"}[sid]; ok {
				if keys := st.get("Condition").get("ForAllValues:StringLike").get("dynamodb:LeadingKeys").strs(); !slices.Equal(keys, []string{want}) {
					t.Errorf("%s reaches leading keys %v, want %s only", sid, keys, want)
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

// The reconciler evicts from the cache (cache.Dynamo.Evict, called on its
// tick at most once per cache.evict_every) with exactly what that calls: a
// Scan of the index and conditional DeleteItems of its entries and id
// items, and DeleteObject (AbortMultipartUpload for an unfinished upload)
// under blobs/ — no read of an archive, no list of the bucket. Each
// statement exists only with the bucket, as do its two variables.
func TestReconcilerCacheEvictionStatements(t *testing.T) {
	tpl := loadTemplate(t)
	want := map[string]struct {
		actions  []string
		resource string
	}{
		"CacheEvictIndex":     {[]string{"dynamodb:DeleteItem", "dynamodb:Scan"}, "CacheIndexTable"},
		"CacheEvictArchives":  {[]string{"s3:AbortMultipartUpload", "s3:DeleteObject"}, "${CacheBucket.Arn}/*blobs/*"},
		"CacheEvictParts":     {[]string{"s3:DeleteObject"}, "${CacheBucket.Arn}/*parts/*"},
		"CacheEvictListParts": {[]string{"s3:ListBucket"}, "CacheBucket"},
	}
	seen := map[string]bool{}
	for _, policy := range tpl.resource("ReconcilerRole").get("Properties").get("Policies").list() {
		for _, raw := range (value{policy}).get("PolicyDocument").get("Statement").list() {
			st, cond := value{raw}, ""
			if branches := st.get("!If").list(); len(branches) == 3 {
				cond, _ = branches[0].(string)
				st = value{branches[1]}
			}
			sid := st.get("Sid").str()
			actions := append(st.get("Action").strs(), st.get("Action").str())
			for _, a := range actions {
				if a == "dynamodb:Scan" && sid != "CacheEvictIndex" {
					t.Errorf("%s allows Scan: only the cache's eviction scans, its index only", sid)
				}
			}
			w, ok := want[sid]
			if !ok {
				if strings.HasPrefix(sid, "Cache") {
					t.Errorf("ReconcilerRole has an unexpected cache statement %s", sid)
				}
				continue
			}
			seen[sid] = true
			if cond != "CreateCacheBucket" {
				t.Errorf("%s is conditional on %q, want CreateCacheBucket", sid, cond)
			}
			actions = slices.DeleteFunc(actions, func(a string) bool { return a == "" })
			slices.Sort(actions)
			if !slices.Equal(actions, w.actions) {
				t.Errorf("%s allows %v, want %v", sid, actions, w.actions)
			}
			r := st.get("Resource")
			if got := r.getAtt() + r.sub() + r.ref(); got != w.resource {
				t.Errorf("%s is on %q, want %q", sid, got, w.resource)
			}
			if sid == "CacheEvictListParts" {
				if p := st.get("Condition").get("StringLike").get("s3:prefix").strs(); !slices.Equal(p, []string{"*parts/*"}) {
					t.Errorf("CacheEvictListParts lists prefixes %v, want *parts/* only", p)
				}
			}
		}
	}
	for sid := range want {
		if !seen[sid] {
			t.Errorf("ReconcilerRole has no statement %s", sid)
		}
	}
	env := tpl.resource("ReconcilerFunction").get("Properties").get("Environment").get("Variables")
	for _, name := range []string{"RUNFLEET_CACHE_TABLE", "RUNFLEET_CACHE_BUCKET"} {
		if br := env.get(name).get("!If").list(); len(br) != 3 || br[0] != "CreateCacheBucket" {
			t.Errorf("ReconcilerFunction's %s is not set on CreateCacheBucket alone", name)
		}
	}
}
