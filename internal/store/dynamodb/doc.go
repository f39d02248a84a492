// Package dynamodb is the store.Store adapter for AWS: one DynamoDB table
// (single-table design, string partition key pk only) holding
//
//	INSTANCE#<name>  one runner instance; is_live while not deleted, ttl once deleted
//	POOL#<name>      live: the pool's reserved capacity slots
//	DELIVERY#<id>    a webhook delivery mark; expires_at, ttl
//
// and a sparse index "live" over the live instances (see schema.go for why
// it is shaped as it is). Every write is conditional; the ones that change
// an instance and its pool's counter together (create, delete) are
// transactions. The schema is also in infra/dynamodb-table.json, for
// template.yaml.
package dynamodb
