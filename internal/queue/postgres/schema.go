package postgres

import "github.com/runfleet/runfleet/internal/pgmigrate"

// schemaComponent names the queue's migrations in runfleet_migrations
// (the store has its own).
const schemaComponent = "queue"

// channel is the LISTEN/NOTIFY channel of every queue in the table; the
// payload is the queue's name.
const channel = "runfleet_queue"

// migrations is the queue's schema, step by step. Append, never edit.
//
// One row per message; dead letters stay in the table, marked, until an
// operator removes them. The partial due index holds live messages only,
// ordered as receivers take them.
var migrations = []pgmigrate.Migration{
	{Version: 1, Name: "queue table, due index, insert notification", SQL: `
CREATE TABLE runfleet_queue (
	id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	queue         text NOT NULL,
	body          bytea NOT NULL,
	sent_at       timestamptz NOT NULL,
	visible_at    timestamptz NOT NULL,
	receive_count integer NOT NULL DEFAULT 0,
	dead_at       timestamptz
);
CREATE INDEX runfleet_queue_due ON runfleet_queue (queue, visible_at, id) WHERE dead_at IS NULL;
CREATE INDEX runfleet_queue_dead ON runfleet_queue (queue, dead_at) WHERE dead_at IS NOT NULL;
CREATE FUNCTION runfleet_queue_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	-- Delivered at commit, once per queue however many rows the
	-- transaction inserted.
	PERFORM pg_notify('runfleet_queue', NEW.queue);
	RETURN NULL;
END $$;
CREATE TRIGGER runfleet_queue_notify AFTER INSERT ON runfleet_queue
	FOR EACH ROW EXECUTE FUNCTION runfleet_queue_notify();
`},
}
