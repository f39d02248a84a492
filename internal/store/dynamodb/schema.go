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
// prefix says what an item is. infra/dynamodb-table.json and template.yaml
// carry the same schema in CloudFormation form, and schema_test.go keeps the
// three from drifting.
const (
	attrPK = "pk"

	prefixInstance = "INSTANCE#"
	prefixPool     = "POOL#"
	prefixJob      = "JOB#"
	prefixMeta     = "META#"
	prefixLease    = "LEASE#"
	prefixBudget   = "BUDGET#"

	// attrTTL is DynamoDB's TTL attribute (epoch seconds). The sweeper is lazy
	// (up to days late, and DynamoDB Local never runs it), so every read and
	// conditional write compares attrExpiresAt instead and treats an expired
	// item as absent; ttl only reclaims the space eventually.
	attrTTL = "ttl"
	// attrExpiresAt is the exact expiry as a fixed-width UTC timestamp, which
	// sorts as text in time order, so condition expressions can compare it.
	attrExpiresAt = "expires_at"

	// Attributes that conditions and error reports read; the rest are named
	// only by the record types' tags.
	attrStatus  = "status"
	attrVersion = "version"
	attrWriteID = "write_id"
	attrPool    = "pool"

	// attrPoolLive is the pool item's counter of reserved capacity slots.
	attrPoolLive = "live"
)

// liveIndex is the sparse GSI over what the reconciler and the engine list:
// live instances and unsettled (open or waiting) jobs. An item carries the
// index keys only while it is one of those, so the index grows with live
// runners and open demand, never with history.
//
// One index partition takes about 1,000 writes/s, so a single partition key
// value would cap the whole fleet there, and a burst of a few thousand jobs
// (each one index write for its instance and one for its job) would throttle
// it. The partition key is therefore a shard — "instance#NN" or "job#NN",
// NN = hash(item key) mod shardCount — and lists query every shard in
// parallel. The sort key narrows within a shard: an instance's pool (a
// pool's live set is one key-equality Query per shard) or a job's QueuedAt
// stamp (each shard comes back oldest first).
//
// KEYS_ONLY: an index write happens only when an item enters or leaves the
// index (its keys never change in between), not on each of its status
// writes; lists fetch the full items with a consistent BatchGetItem.
//
// Existing tables: CloudFormation cannot change a GSI's key schema in place
// and refuses an update that creates or deletes more than one GSI, so this
// index has a new name (the old one, "live", was one partition keyed by
// is_live) and is ONE index for both kinds of item: updating a stack made
// before it is a single GSI creation. Lists read only this index, so they
// fail while DynamoDB backfills it after such an update, and miss the live
// instances written before it until MigrateLegacyLive (or their next write)
// moves them.
const (
	liveIndex    = "live_sharded"
	attrLiveKey  = "live_shard"
	attrLiveSort = "live_sort"
)

// legacyLiveIndex is the unsharded index of earlier releases. Nothing writes
// its key any more and no list reads it; it stays in the schema because
// deleting it in the same stack update that creates liveIndex would be a
// second GSI change, which CloudFormation refuses. MigrateLegacyLive reads
// it once to move instances written before the upgrade into liveIndex. A
// later release drops it (one GSI deletion).
const (
	legacyLiveIndex = "live"
	attrLegacyLive  = "is_live"
)

// tableInput is the one definition of the table's schema; CreateTable sends
// it and schema_test.go checks infra/dynamodb-table.json and template.yaml
// against it.
func tableInput(table string) *ddb.CreateTableInput {
	return &ddb.CreateTableInput{
		TableName:   aws.String(table),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(attrPK), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(attrLiveKey), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(attrLiveSort), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(attrLegacyLive), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(attrPool), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(attrPK), KeyType: types.KeyTypeHash},
		},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{
			{
				IndexName: aws.String(liveIndex),
				KeySchema: []types.KeySchemaElement{
					{AttributeName: aws.String(attrLiveKey), KeyType: types.KeyTypeHash},
					{AttributeName: aws.String(attrLiveSort), KeyType: types.KeyTypeRange},
				},
				Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
			},
			{
				IndexName: aws.String(legacyLiveIndex),
				KeySchema: []types.KeySchemaElement{
					{AttributeName: aws.String(attrLegacyLive), KeyType: types.KeyTypeHash},
					{AttributeName: aws.String(attrPool), KeyType: types.KeyTypeRange},
				},
				Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
			},
		},
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

// CreateTable creates the table with its indexes, waits until the table and
// indexes are ACTIVE, and enables TTL. Deployments get the same schema from
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
