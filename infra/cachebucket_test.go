package infra

import (
	"testing"
)

// The actions/cache bucket (docs/actions-cache.md): made only when asked
// for, private, encrypted (with the stack's KMS key when it has one),
// reachable over TLS only, and with the lifecycle rules that back up
// runfleet's eviction and drop uploads a machine never finished.
func TestCacheBucket(t *testing.T) {
	tpl := loadTemplate(t)
	id := tpl.onlyResourceOfType(t, "AWS::S3::Bucket")
	b := tpl.resource(id)
	if b.get("Condition").str() != "CreateCacheBucket" {
		t.Fatalf("%s is not conditional on CreateCacheBucket", id)
	}
	if tpl.condition(t, "CreateCacheBucket", map[string]string{"CacheBucketMaxAgeDays": "0"}) ||
		!tpl.condition(t, "CreateCacheBucket", map[string]string{"CacheBucketMaxAgeDays": "30"}) {
		t.Fatal("CreateCacheBucket must hold exactly when CacheBucketMaxAgeDays is above 0")
	}
	props := b.get("Properties")
	pab := props.get("PublicAccessBlockConfiguration")
	for _, k := range []string{"BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"} {
		if pab.get(k).v != true {
			t.Errorf("PublicAccessBlockConfiguration.%s = %v, want true", k, pab.get(k).v)
		}
	}
	sse := props.get("BucketEncryption").get("ServerSideEncryptionConfiguration").list()
	if len(sse) != 1 || (value{sse[0]}).get("ServerSideEncryptionByDefault").get("SSEAlgorithm").v == nil {
		t.Errorf("no default encryption: %s", asJSON(props.get("BucketEncryption").v))
	}
	rules := props.get("LifecycleConfiguration").get("Rules").list()
	var expires, aborts, staging bool
	for _, r := range rules {
		rv := value{r}
		if rv.get("Status").str() != "Enabled" {
			continue
		}
		// No prefix: it covers every object, the entries' parts/ too.
		if rv.get("Prefix").v == nil && rv.get("Filter").v == nil && rv.get("ExpirationInDays").ref() == "CacheBucketMaxAgeDays" {
			expires = true
		}
		if rv.get("AbortIncompleteMultipartUpload").get("DaysAfterInitiation").v != nil {
			aborts = true
		}
		if rv.get("Prefix").str() == "staging/" && rv.get("ExpirationInDays").v != nil {
			staging = true
		}
	}
	if !expires || !aborts || !staging {
		t.Errorf("lifecycle rules: age eviction %v, unfinished multipart uploads %v, staging %v; want all", expires, aborts, staging)
	}

	pid := tpl.onlyResourceOfType(t, "AWS::S3::BucketPolicy")
	policy := tpl.resource(pid).get("Properties")
	if policy.get("Bucket").ref() != id {
		t.Fatalf("%s is not on %s", pid, id)
	}
	tlsOnly := false
	for _, st := range policy.get("PolicyDocument").get("Statement").list() {
		sv := value{st}
		if sv.get("Effect").str() == "Deny" && sv.get("Condition").get("Bool").get("aws:SecureTransport").str() == "false" {
			tlsOnly = true
		}
	}
	if !tlsOnly {
		t.Error("the bucket policy does not deny requests without TLS")
	}
	if tpl.get("Outputs").get("CacheBucketName").get("Value").ref() != id {
		t.Error("no CacheBucketName output naming the bucket")
	}
}
