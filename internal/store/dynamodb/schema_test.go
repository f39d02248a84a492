package dynamodb

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

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

func TestCreateTableMatchesInfraFile(t *testing.T) {
	file := readInfraTable(t)
	file.Metadata = nil
	code := asInfra(tableInput("any"), ttlInput("any"))
	if !reflect.DeepEqual(file, code) {
		fileJSON, _ := json.MarshalIndent(file, "", "  ")
		codeJSON, _ := json.MarshalIndent(code, "", "  ")
		t.Fatalf("infra/dynamodb-table.json and CreateTable disagree:\nfile: %s\ncode: %s", fileJSON, codeJSON)
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
	if !tableActive(out.Table) || len(out.Table.GlobalSecondaryIndexes) != 1 ||
		aws.ToString(out.Table.GlobalSecondaryIndexes[0].IndexName) != liveIndex {
		t.Fatalf("table not as created: %+v", out.Table)
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
