// Package dynamodb is the store.Store adapter for AWS: one DynamoDB table
// (single-table design, string partition key pk only) holding
//
//	INSTANCE#<name>           one runner instance; index keys while live, ttl once deleted
//	POOL#<name>               live: the pool's reserved capacity slots
//	JOB#<id>#<run attempt>    one job of the ledger; index keys while open or waiting, ttl once settled
//	CREDENTIALS#<name>        an instance's JIT runner configuration; ttl
//	META#installation         this installation's random id
//	META#spot_breaker#<pool>  a pool's spot circuit breaker
//	LEASE#<name>              a lease: holder, expiry, version (kept, free, once released)
//	BUDGET#<credential>       a GitHub credential's shared API budget (state, version)
//
// and a sparse index, live_sharded, over the live instances and the
// unsettled jobs, spread over shards so that no index partition takes a
// burst alone (see schema.go for its shape and for the legacy index "live"
// it replaces). Every write is conditional; the ones that change several
// items together (an admission: instance, pool slot and job; a delete:
// instance and pool slot) are transactions. The schema is also in
// infra/dynamodb-table.json and template.yaml.
package dynamodb
