package cache

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Evict implements Store: a scan of the entries, PlanEviction over them,
// and for each evicted entry its item deleted on condition it is still
// that entry (a new reservation of the key is never removed), then its id
// item and its objects. It is meant for one caller at a time (the
// reconciler's schedule); two at once only delete the same things twice.
func (d *Dynamo) Evict(ctx context.Context) (EvictStats, error) {
	var all []Entry
	pages := dynamodb.NewScanPaginator(d.db, &dynamodb.ScanInput{
		TableName:                 &d.table,
		FilterExpression:          aws.String("begins_with(pk, :r)"),
		ExpressionAttributeValues: map[string]dtypes.AttributeValue{":r": sAttr("repo#")},
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return EvictStats{}, fmt.Errorf("cache: scan the index: %w", err)
		}
		for _, it := range page.Items {
			all = append(all, entryFrom(it))
		}
	}
	byID := make(map[int64]Entry, len(all))
	for _, e := range all {
		byID[e.ID] = e
	}
	var st EvictStats
	for _, id := range PlanEviction(all, d.now(), d.policy) {
		e := byID[id]
		if !d.forget(ctx, e) {
			continue
		}
		st.Entries++
		st.Bytes += e.Size
		delete(byID, id)
	}
	var left StoreStats
	for _, e := range byID {
		if e.Finalized {
			left.Entries++
			left.Bytes += e.Size
		}
	}
	d.statsMu.Lock()
	d.stats = left
	d.statsMu.Unlock()
	if st.Entries > 0 {
		d.log.Info("cache: evicted", "entries", st.Entries, "bytes", st.Bytes)
	}
	return st, nil
}

// CreateDynamoTable makes a cache index table (tests, and a store outside
// the stack; template.yaml makes the stack's).
func CreateDynamoTable(ctx context.Context, db *dynamodb.Client, table string) error {
	_, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: &table,
		AttributeDefinitions: []dtypes.AttributeDefinition{
			{AttributeName: aws.String(attrPK), AttributeType: dtypes.ScalarAttributeTypeS},
			{AttributeName: aws.String(attrSK), AttributeType: dtypes.ScalarAttributeTypeS},
		},
		KeySchema: []dtypes.KeySchemaElement{
			{AttributeName: aws.String(attrPK), KeyType: dtypes.KeyTypeHash},
			{AttributeName: aws.String(attrSK), KeyType: dtypes.KeyTypeRange},
		},
		BillingMode: dtypes.BillingModePayPerRequest,
	})
	if err != nil && !strings.Contains(err.Error(), "ResourceInUse") {
		return fmt.Errorf("cache: create table %s: %w", table, err)
	}
	return nil
}
