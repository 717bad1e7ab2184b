-- A shard of the pool (docs/SHARDING.md §1, §5). An expand only: today's code runs unchanged on it, since shards
-- migrate one at a time while serving (§4's rule). Numbered 0012: 0011 adds organizations.bucket.

-- Fences of the buckets being moved: 'moving' (the source: writes refused), 'incoming' (the destination: writes
-- refused), 'moved' (the source afterwards: everything refused).
CREATE TABLE bucket_fences (
  bucket INTEGER PRIMARY KEY CHECK (bucket BETWEEN 0 AND 1023),
  state  TEXT NOT NULL CHECK (state IN ('moving', 'incoming', 'moved')),
  since  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

-- The fence guard: a write batch first inserts here the fences that refuse it; any row aborts the whole transaction.
-- Nothing is ever stored.
CREATE TABLE fence_trips (bucket INTEGER);
CREATE TRIGGER fence_trips_abort BEFORE INSERT ON fence_trips
BEGIN
  SELECT RAISE(ABORT, 'bucket is moving');
END;

-- Idempotency-Key claims live on the shard of the request's resource, where the claiming key may have no row (it is
-- homed on another shard): the foreign key to api_keys goes (its cascade never fired: a key is revoked, never
-- deleted; were one deleted, its claims would still expire within 24 hours and be dropped hourly, as every claim). `bucket`: the resource's, for moves.
-- Nothing references this table; its one index is made again.
CREATE TABLE idempotency_keys_next (
  key_hash        TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  fingerprint     TEXT NOT NULL,
  result_id       TEXT NOT NULL,
  created_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  expires_at      TEXT NOT NULL,
  bucket          INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (key_hash, idempotency_key)
) WITHOUT ROWID;
INSERT INTO idempotency_keys_next (key_hash, idempotency_key, fingerprint, result_id, created_at, expires_at)
  SELECT key_hash, idempotency_key, fingerprint, result_id, created_at, expires_at FROM idempotency_keys;
DROP TABLE idempotency_keys;
ALTER TABLE idempotency_keys_next RENAME TO idempotency_keys;
CREATE INDEX idempotency_keys_by_expiry ON idempotency_keys (expires_at);
