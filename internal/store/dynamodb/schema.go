package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The table holds every record kind under one string partition key; the key
// prefix says what an item is. infra/dynamodb-table.json is the same schema in
// CloudFormation form, and schema_test.go keeps the two from drifting.
const (
	attrPK = "pk"

	prefixInstance = "INSTANCE#"
	prefixPool     = "POOL#"
	prefixDelivery = "DELIVERY#"

	// attrTTL is DynamoDB's TTL attribute (epoch seconds). The sweeper is lazy
	// (up to days late, and DynamoDB Local never runs it), so every read and
	// conditional write compares attrExpiresAt instead and treats an expired
	// item as absent; ttl only reclaims the space eventually.
	attrTTL = "ttl"
	// attrExpiresAt is the exact expiry as a fixed-width UTC timestamp, which
	// sorts as text in time order, so condition expressions can compare it.
	attrExpiresAt = "expires_at"

	// Instance attributes that conditions and error reports read; the rest
	// are named only by instanceRecord's tags.
	attrStatus  = "status"
	attrVersion = "version"
	attrName    = "name"
	attrWriteID = "write_id"

	// attrPoolLive is the pool item's counter of reserved capacity slots.
	attrPoolLive = "live"

	// liveIndex is a sparse GSI over live instances. An instance carries
	// attrIsLive only while its status is not deleted, so the index holds
	// exactly the live set and the reconciler's reads grow with live runners,
	// never with history.
	//
	// Key choice: one constant partition (attrIsLive = "1") with the pool as
	// sort key, so ListLiveInstances is one Query and ListInstancesByPool is
	// the same Query narrowed by the sort key. The hot-partition risk is small
	// because the projection is KEYS_ONLY: an index write happens only when an
	// index key changes, i.e. twice per instance (created, deleted), not on
	// each of its ~8 status writes. One partition takes ~1000 writes/s, so the
	// ceiling is ~500 instance lifecycles per second, far above the job rate
	// GitHub's API rate limits allow an App installation. Should that ever
	// bind, make attrIsLive a shard number and query each shard.
	// KEYS_ONLY also halves write cost per update; list calls pay for it with
	// a BatchGetItem of the full items, which the reconciler can afford.
	liveIndex  = "live"
	attrIsLive = "is_live"
	isLiveYes  = "1"
	attrPool   = "pool"
)

// tableInput is the one definition of the table's schema; CreateTable sends
// it and schema_test.go checks it against infra/dynamodb-table.json.
func tableInput(table string) *ddb.CreateTableInput {
	return &ddb.CreateTableInput{
		TableName:   aws.String(table),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(attrPK), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(attrIsLive), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(attrPool), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(attrPK), KeyType: types.KeyTypeHash},
		},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName: aws.String(liveIndex),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(attrIsLive), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(attrPool), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
		}},
	}
}

// ttlInput enables DynamoDB's TTL sweeper on attrTTL.
func ttlInput(table string) *ddb.UpdateTimeToLiveInput {
	return &ddb.UpdateTimeToLiveInput{
		TableName: aws.String(table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(attrTTL),
			Enabled:       aws.Bool(true),
		},
	}
}

// CreateTable creates the table with its live index, waits until the table
// and index are ACTIVE, and enables TTL. Deployments get the same schema from
// template.yaml; this is for tests and local set-ups.
func CreateTable(ctx context.Context, client *ddb.Client, table string) error {
	if _, err := client.CreateTable(ctx, tableInput(table)); err != nil {
		return fmt.Errorf("create table %s: %w", table, err)
	}
	if err := waitActive(ctx, client, table); err != nil {
		return err
	}
	if _, err := client.UpdateTimeToLive(ctx, ttlInput(table)); err != nil {
		return fmt.Errorf("enable ttl on table %s: %w", table, err)
	}
	return nil
}

// waitActive polls until the table and all its indexes are ACTIVE. The SDK's
// waiter starts at a 20 s delay, far too slow for an emulator that is ready at
// once; this starts at 50 ms and backs off to 2 s.
func waitActive(ctx context.Context, client *ddb.Client, table string) error {
	delay := 50 * time.Millisecond
	for {
		out, err := client.DescribeTable(ctx, &ddb.DescribeTableInput{TableName: aws.String(table)})
		var missing *types.ResourceNotFoundException
		switch {
		case errors.As(err, &missing):
			// Just created: the control plane may not list it yet.
		case err != nil:
			return fmt.Errorf("describe table %s: %w", table, err)
		case tableActive(out.Table):
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for table %s to become active: %w", table, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(2*delay, 2*time.Second)
	}
}

func tableActive(t *types.TableDescription) bool {
	if t == nil || t.TableStatus != types.TableStatusActive {
		return false
	}
	for _, gsi := range t.GlobalSecondaryIndexes {
		if gsi.IndexStatus != types.IndexStatusActive {
			return false
		}
	}
	return true
}
