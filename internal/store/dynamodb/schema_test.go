package dynamodb

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"gopkg.in/yaml.v3"

	"github.com/runfleet/runfleet/internal/testenv"
)

// infraTable is the part of infra/dynamodb-table.json (a CloudFormation
// AWS::DynamoDB::Table resource) that defines the schema. Unknown fields are
// refused when decoding, so a property added there must be added here and to
// tableInput too.
type infraTable struct {
	Type       string
	Metadata   map[string]string
	Properties struct {
		BillingMode             string
		AttributeDefinitions    []infraAttribute
		KeySchema               []infraKey
		GlobalSecondaryIndexes  []infraIndex
		TimeToLiveSpecification struct {
			AttributeName string
			Enabled       bool
		}
	}
}

type infraAttribute struct{ AttributeName, AttributeType string }

type infraKey struct{ AttributeName, KeyType string }

type infraIndex struct {
	IndexName  string
	KeySchema  []infraKey
	Projection struct {
		ProjectionType   string
		NonKeyAttributes []string `json:",omitempty"`
	}
}

func readInfraTable(t *testing.T) infraTable {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "infra", "dynamodb-table.json"))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var table infraTable
	if err := dec.Decode(&table); err != nil {
		t.Fatalf("infra/dynamodb-table.json: %v", err)
	}
	return table
}

// readTemplateTable returns the schema part of template.yaml's one
// AWS::DynamoDB::Table resource. Its other properties (backups,
// encryption) are not schema and are checked by infra/template_test.go.
func readTemplateTable(t *testing.T) infraTable {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Resources map[string]struct {
			Type       string    `yaml:"Type"`
			Properties yaml.Node `yaml:"Properties"`
		} `yaml:"Resources"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("template.yaml: %v", err)
	}
	// The state table; the template's other table (CacheIndexTable) is
	// the cache's, tested with it (internal/cache).
	const stateTable = "StateTable"
	res, ok := doc.Resources[stateTable]
	if !ok || res.Type != "AWS::DynamoDB::Table" {
		t.Fatalf("template.yaml has no DynamoDB table %s", stateTable)
	}
	// Through JSON, so the infra file's field names apply unchanged.
	var props map[string]any
	if err := res.Properties.Decode(&props); err != nil {
		t.Fatalf("template.yaml %s: %v", stateTable, err)
	}
	raw, err = json.Marshal(props)
	if err != nil {
		t.Fatal(err)
	}
	table := infraTable{Type: res.Type}
	if err := json.Unmarshal(raw, &table.Properties); err != nil {
		t.Fatalf("template.yaml %s: %v", stateTable, err)
	}
	return table
}

// asInfra renders what CreateTable sends in the infra file's shape.
func asInfra(in *ddb.CreateTableInput, ttl *ddb.UpdateTimeToLiveInput) infraTable {
	var out infraTable
	out.Type = "AWS::DynamoDB::Table"
	p := &out.Properties
	p.BillingMode = string(in.BillingMode)
	for _, a := range in.AttributeDefinitions {
		p.AttributeDefinitions = append(p.AttributeDefinitions, infraAttribute{aws.ToString(a.AttributeName), string(a.AttributeType)})
	}
	p.KeySchema = asInfraKeys(in.KeySchema)
	for _, g := range in.GlobalSecondaryIndexes {
		idx := infraIndex{IndexName: aws.ToString(g.IndexName), KeySchema: asInfraKeys(g.KeySchema)}
		idx.Projection.ProjectionType = string(g.Projection.ProjectionType)
		idx.Projection.NonKeyAttributes = g.Projection.NonKeyAttributes
		p.GlobalSecondaryIndexes = append(p.GlobalSecondaryIndexes, idx)
	}
	p.TimeToLiveSpecification.AttributeName = aws.ToString(ttl.TimeToLiveSpecification.AttributeName)
	p.TimeToLiveSpecification.Enabled = aws.ToBool(ttl.TimeToLiveSpecification.Enabled)
	return out
}

func asInfraKeys(keys []types.KeySchemaElement) []infraKey {
	var out []infraKey
	for _, k := range keys {
		out = append(out, infraKey{aws.ToString(k.AttributeName), string(k.KeyType)})
	}
	return out
}

func TestCreateTableMatchesInfraFileAndTemplate(t *testing.T) {
	code := asInfra(tableInput("any"), ttlInput("any"))
	file := readInfraTable(t)
	file.Metadata = nil
	for name, other := range map[string]infraTable{
		"infra/dynamodb-table.json": file,
		"template.yaml":             readTemplateTable(t),
	} {
		if !reflect.DeepEqual(other, code) {
			otherJSON, _ := json.MarshalIndent(other, "", "  ")
			codeJSON, _ := json.MarshalIndent(code, "", "  ")
			t.Errorf("%s and CreateTable disagree:\n%s: %s\ncode: %s", name, name, otherJSON, codeJSON)
		}
	}
}

func TestCreateTableIsActiveWithIndexAndTTL(t *testing.T) {
	ctx := context.Background()
	client := testenv.DynamoDB(t)
	table := testenv.UniqueName(t, "schema")
	if err := CreateTable(ctx, client, table); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dropTable(client, table) })

	out, err := client.DescribeTable(ctx, &ddb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	var indexes []string
	for _, gsi := range out.Table.GlobalSecondaryIndexes {
		indexes = append(indexes, aws.ToString(gsi.IndexName))
	}
	slices.Sort(indexes)
	if !tableActive(out.Table) || !slices.Equal(indexes, []string{legacyLiveIndex, liveIndex}) {
		t.Fatalf("table not as created (indexes %v): %+v", indexes, out.Table)
	}
	ttl, err := client.DescribeTimeToLive(ctx, &ddb.DescribeTimeToLiveInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	if d := ttl.TimeToLiveDescription; d == nil || aws.ToString(d.AttributeName) != attrTTL ||
		(d.TimeToLiveStatus != types.TimeToLiveStatusEnabled && d.TimeToLiveStatus != types.TimeToLiveStatusEnabling) {
		t.Fatalf("TTL not enabled on %q: %+v", attrTTL, d)
	}

	if err := CreateTable(ctx, client, table); err == nil {
		t.Fatal("creating an existing table succeeded")
	}
}

// releasedIndexes are the GSIs of the schema last released. CloudFormation
// refuses a stack update that creates or deletes more than one GSI (and
// cannot change one's keys in place), so a deployed table can only reach
// the current schema if it differs from this by at most one index. When a
// release ships, set this to its indexes.
var releasedIndexes = []string{legacyLiveIndex}

func TestSchemaChangeIsOneIndexAtMost(t *testing.T) {
	released := map[string]bool{}
	for _, name := range releasedIndexes {
		released[name] = true
	}
	changes := 0
	for _, gsi := range tableInput("any").GlobalSecondaryIndexes {
		name := aws.ToString(gsi.IndexName)
		if released[name] {
			delete(released, name)
		} else {
			changes++ // created
		}
	}
	changes += len(released) // deleted
	if changes > 1 {
		t.Fatalf("the schema creates or deletes %d GSIs since the last release; a CloudFormation update takes one", changes)
	}
}
