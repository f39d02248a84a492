package cache

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Lookup implements Store: one query per readable scope, Match over what
// they return, the match's archive checked (the bucket's lifecycle rule
// may have removed it: the entry is then dropped and Match runs again),
// and the match's last access and TTL written (a lost write only makes
// eviction earlier).
func (d *Dynamo) Lookup(ctx context.Context, repoID int64, scopes, keys []string, version string) (Entry, bool, error) {
	now := d.now()
	cands, err := d.candidates(ctx, repoID, scopes, version, now)
	if err != nil {
		return Entry{}, false, err
	}
	for {
		e, ok := Match(cands, repoID, scopes, keys, version)
		if !ok {
			return Entry{}, false, nil
		}
		if d.archiveExists(ctx, e) {
			d.touch(ctx, e, now)
			e.LastAccess = now
			return e, true, nil
		}
		d.log.Info("cache: dropping an entry whose archive is gone", "id", e.ID, "repo_id", repoID, "key", e.Key)
		d.forget(ctx, e)
		cands = slices.DeleteFunc(cands, func(c Entry) bool { return c.ID == e.ID })
	}
}

// candidates are repoID's finalized, unexpired entries of version in scopes.
func (d *Dynamo) candidates(ctx context.Context, repoID int64, scopes []string, version string, now time.Time) ([]Entry, error) {
	var cands []Entry
	for _, scope := range scopes {
		pages := dynamodb.NewQueryPaginator(d.db, &dynamodb.QueryInput{
			TableName:              &d.table,
			KeyConditionExpression: aws.String("pk = :pk AND begins_with(sk, :p)"),
			FilterExpression:       aws.String("finalized = :t AND (attribute_not_exists(expires) OR expires > :now)"),
			ExpressionAttributeValues: map[string]dtypes.AttributeValue{
				":pk": sAttr(repoPK(repoID)), ":p": sAttr(scopePrefix(scope, version)), ":t": bAttr(true), ":now": nAttr(now.Unix()),
			},
		})
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("cache: query the index: %w", err)
			}
			for _, it := range page.Items {
				cands = append(cands, entryFrom(it))
			}
		}
	}
	return cands, nil
}

// touch records a read of e at now: last access, and both items' TTL.
func (d *Dynamo) touch(ctx context.Context, e Entry, now time.Time) {
	set, vals := "SET last_access = :a", map[string]dtypes.AttributeValue{":a": nAttr(now.UnixNano()), ":id": nAttr(e.ID)}
	exp, hasExp := d.expiry(now)
	if hasExp {
		set += ", expires = :e"
		vals[":e"] = exp
	}
	if _, err := d.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &d.table, Key: refKey(e.Ref), UpdateExpression: &set,
		ConditionExpression: aws.String("id = :id"), ExpressionAttributeValues: vals,
	}); err != nil && !conditionFailed(err) {
		d.log.Warn("cache: recording a read failed", "id", e.ID, "err", err)
	}
	if !hasExp {
		return
	}
	if _, err := d.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &d.table, Key: idKey(e.ID), UpdateExpression: aws.String("SET expires = :e"),
		ConditionExpression:       aws.String("attribute_exists(pk)"),
		ExpressionAttributeValues: map[string]dtypes.AttributeValue{":e": exp},
	}); err != nil && !conditionFailed(err) {
		d.log.Warn("cache: recording a read failed", "id", e.ID, "err", err)
	}
}

// forget deletes entry e's item, on condition it is still e, and its id
// item and objects.
func (d *Dynamo) forget(ctx context.Context, e Entry) bool {
	_, err := d.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: &d.table, Key: refKey(e.Ref),
		ConditionExpression:       aws.String("id = :id"),
		ExpressionAttributeValues: map[string]dtypes.AttributeValue{":id": nAttr(e.ID)},
	})
	if err != nil {
		if !conditionFailed(err) {
			d.log.Warn("cache: removing an entry failed", "id", e.ID, "err", err)
		}
		return false
	}
	d.removeObjects(ctx, e.ID)
	return true
}
