package infra

import (
	"slices"
	"testing"
)

// Runner bootstrap's wiring: the worker mints tokens with the key the
// metadata function verifies with, and hands providers the metadata
// function's own URL; the stack generates the key.
func TestMetadataFunctionWiring(t *testing.T) {
	tpl := loadTemplate(t)
	meta := tpl.resource("MetadataFunction").get("Properties")
	if got := meta.get("FunctionUrlConfig").get("AuthType").str(); got != "NONE" {
		t.Errorf("MetadataFunction FunctionUrlConfig.AuthType = %q, want NONE (machines authenticate with their instance token)", got)
	}
	workerEnv := tpl.resource("WorkerFunction").get("Properties").get("Environment").get("Variables")
	if got := workerEnv.get("RUNFLEET_METADATA_URL").getAtt(); got != "MetadataFunctionUrl" {
		t.Errorf("worker RUNFLEET_METADATA_URL = %s, want !GetAtt MetadataFunctionUrl.FunctionUrl", asJSON(workerEnv.get("RUNFLEET_METADATA_URL").v))
	}
	metaKey := meta.get("Environment").get("Variables").get("RUNFLEET_INSTANCE_TOKEN_KEY_ARN").ref()
	workerKey := workerEnv.get("RUNFLEET_INSTANCE_TOKEN_KEY_ARN").ref()
	if metaKey == "" || metaKey != workerKey {
		t.Fatalf("token key: metadata function !Ref %q, worker !Ref %q; want the same secret", metaKey, workerKey)
	}
	secret := tpl.resource(metaKey)
	if secret.get("Type").str() != "AWS::SecretsManager::Secret" || secret.get("Properties").get("GenerateSecretString").v == nil {
		t.Errorf("%s is not a generated Secrets Manager secret", metaKey)
	}
	if n := secret.get("Properties").get("GenerateSecretString").get("PasswordLength").num(t); n < 32 {
		t.Errorf("%s is %v characters; the key must be at least 32 bytes", metaKey, n)
	}
}

// The metadata function is public; its role reaches only what bootstrap
// needs: no GitHub secret, no webhook secret, no index query, no
// transaction, and only instance and credentials items.
func TestMetadataRoleIsNarrow(t *testing.T) {
	tpl := loadTemplate(t)
	role := tpl.resource("MetadataRole").get("Properties")
	if role.get("ManagedPolicyArns").v != nil {
		t.Error("MetadataRole has managed policies (provider permissions?)")
	}
	var actions []string
	var leadingKeys []string
	for _, policy := range role.get("Policies").list() {
		walkStatements(value{policy}.get("PolicyDocument").get("Statement"), func(st value) {
			if isCacheStatement(st) {
				return // the cache's, conditional on its bucket: cacheindex_test.go
			}
			actions = append(actions, st.get("Action").strs()...)
			if a := st.get("Action").str(); a != "" {
				actions = append(actions, a)
			}
			if keys := st.get("Condition").get("ForAllValues:StringLike").get("dynamodb:LeadingKeys"); keys.v != nil {
				leadingKeys = append(leadingKeys, keys.strs()...)
			}
			if r := st.get("Resource").ref(); r == "GitHubSecretArn" || r == "WebhookSecret" || r == "WebhookSecretArn" {
				t.Errorf("MetadataRole statement %s reaches %s", st.get("Sid").str(), r)
			}
		})
	}
	for _, forbidden := range []string{"dynamodb:Query", "dynamodb:BatchGetItem", "dynamodb:TransactWriteItems", "dynamodb:Scan", "sqs:ReceiveMessage"} {
		if slices.Contains(actions, forbidden) {
			t.Errorf("MetadataRole allows %s", forbidden)
		}
	}
	for _, needed := range []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:DeleteItem", "sqs:SendMessage", "secretsmanager:GetSecretValue"} {
		if !slices.Contains(actions, needed) {
			t.Errorf("MetadataRole lacks %s", needed)
		}
	}
	slices.Sort(leadingKeys)
	if !slices.Equal(leadingKeys, []string{"CREDENTIALS#*", "INSTANCE#*"}) {
		t.Errorf("MetadataRole table access is limited to leading keys %v, want instance and credentials items only", leadingKeys)
	}
}
