package postgres

import "github.com/runfleet/runfleet/internal/pgmigrate"

// schemaComponent names the store's migrations in runfleet_migrations
// (the queue has its own).
const schemaComponent = "store"

// migrations is the store's schema, step by step; pgmigrate runs the ones
// a database lacks at Open. Append, never edit.
//
// Records are kept whole as JSON in a json column (text, checked to be
// JSON): the store never reads inside it, so jsonb's parsing would be cost
// without use, and json keeps what jsonb refuses (a \u0000 in a provider's
// fault text). What is queried or compared — names, pools, statuses,
// versions, times — are columns of their own, written from the record in
// the same statement, with partial indexes so that listing live instances,
// open jobs and what is due for purging never walks the history.
var migrations = []pgmigrate.Migration{
	{Version: 1, Name: "instances, pools, jobs, records, credentials, meta", SQL: `
CREATE TABLE runfleet_meta (
	key   text PRIMARY KEY,
	value text NOT NULL
);
CREATE TABLE runfleet_instances (
	name       text PRIMARY KEY,
	pool       text NOT NULL,
	status     text NOT NULL,
	version    bigint NOT NULL,
	expires_at timestamptz,
	record     json NOT NULL
);
CREATE INDEX runfleet_instances_live ON runfleet_instances (pool, name) WHERE status <> 'deleted';
CREATE INDEX runfleet_instances_expiry ON runfleet_instances (expires_at) WHERE status = 'deleted';
CREATE TABLE runfleet_pools (
	name text PRIMARY KEY,
	live integer NOT NULL CHECK (live >= 0)
);
CREATE TABLE runfleet_jobs (
	key        text PRIMARY KEY,
	status     text NOT NULL,
	version    bigint NOT NULL,
	queued_at  timestamptz NOT NULL,
	expires_at timestamptz,
	record     json NOT NULL
);
CREATE INDEX runfleet_jobs_open ON runfleet_jobs (queued_at, key) WHERE status IN ('open', 'waiting');
CREATE INDEX runfleet_jobs_expiry ON runfleet_jobs (expires_at) WHERE status NOT IN ('open', 'waiting');
CREATE TABLE runfleet_records (
	kind    text NOT NULL,
	name    text NOT NULL,
	version bigint NOT NULL,
	record  json NOT NULL,
	PRIMARY KEY (kind, name)
);
CREATE TABLE runfleet_credentials (
	instance           text PRIMARY KEY,
	create_attempt     integer NOT NULL,
	encoded_jit_config text NOT NULL,
	expires_at         timestamptz NOT NULL
);
CREATE INDEX runfleet_credentials_expiry ON runfleet_credentials (expires_at);
`}, // unmatched (runner.JobUnmatched) is unsettled demand: listed with the
	// open jobs, never purged before it settles. The partial indexes follow
	// the set of unsettled statuses.
	{Version: 2, Name: "unmatched jobs are unsettled", SQL: `
DROP INDEX runfleet_jobs_open;
DROP INDEX runfleet_jobs_expiry;
CREATE INDEX runfleet_jobs_open ON runfleet_jobs (queued_at, key) WHERE status IN ('open', 'waiting', 'unmatched');
CREATE INDEX runfleet_jobs_expiry ON runfleet_jobs (expires_at) WHERE status NOT IN ('open', 'waiting', 'unmatched');
`},
}
