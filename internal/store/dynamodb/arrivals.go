package dynamodb

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/runfleet/runfleet/internal/store"
)

var _ store.Arrivals = (*Store)(nil)

// ListArrivals implements store.Arrivals with one Scan of the table for
// all pools, filtered to job records queued at or after since and
// projected to the pool and the queued time; the pools asked for are kept.
// The table has no index over settled jobs (the sparse live index holds
// only unsettled ones), and the forecast reads the ledger's week, so there
// is no cheaper read with this schema: a Scan reads (and is billed for)
// every item, instances and other pools' jobs included, so it is read once
// a reconcile pass for all the pools with a queue-time target together.
// For a ledger of a few thousand jobs that is a few thousand read units a
// pass; docs/warm-pools.md says what it costs and what would be cheaper.
// The read is eventually consistent: a job queued within the last second
// may be missed, which a forecast of the coming half hour does not feel.
// Jobs whose retention is over but not yet swept by TTL are left out, as
// GetJob does.
func (s *Store) ListArrivals(ctx context.Context, pools []string, since time.Time) (map[string][]time.Time, error) {
	// The pools are kept here rather than in the filter: a filter spares
	// no read units, and an IN list holds at most 100 values.
	input := &ddb.ScanInput{
		TableName:            aws.String(s.table),
		FilterExpression:     aws.String("begins_with(#pk, :job) AND #queued >= :since AND (attribute_not_exists(#expires) OR #expires > :now)"),
		ProjectionExpression: aws.String("#pool, #queued"),
		ExpressionAttributeNames: map[string]string{
			"#pk": attrPK, "#pool": attrPool, "#queued": attrJobQueuedAt, "#expires": attrExpiresAt,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":job":   &types.AttributeValueMemberS{Value: prefixJob},
			":since": &types.AttributeValueMemberS{Value: formatTime(since)},
			":now":   &types.AttributeValueMemberS{Value: formatTime(s.now())},
		},
	}
	if s.pageSize > 0 {
		input.Limit = aws.Int32(s.pageSize)
	}
	out := map[string][]time.Time{}
	pages := ddb.NewScanPaginator(s.client, input)
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("dynamodb: list arrivals of pools %v: %w", pools, err)
		}
		for _, item := range page.Items {
			pool := stringAttr(item, attrPool)
			if !slices.Contains(pools, pool) {
				continue
			}
			t, err := parseTime(stringAttr(item, attrJobQueuedAt))
			if err != nil {
				return nil, fmt.Errorf("dynamodb: list arrivals of pool %s: %w", pool, err)
			}
			out[pool] = append(out[pool], t)
		}
	}
	return out, nil
}

// attrJobQueuedAt is the job record's queued time (jobRecord's tag), a
// fixed-width stamp, so the filter compares it as a string.
const attrJobQueuedAt = "queued_at"
