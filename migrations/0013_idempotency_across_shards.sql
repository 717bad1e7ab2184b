-- Idempotency-Key across shards (docs/SHARDING.md §7e). An expand: the code before it runs unchanged on it.
--
-- Claims are keyed by their bucket too, so that a bucket move, which copies the claims of its buckets only to a shard
-- holding none of them, can never meet a claim of another bucket with the same key (a key used in organizations on
-- two shards). Nothing references this table; its index is made again.
CREATE TABLE idempotency_keys_next (
  key_hash        TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  fingerprint     TEXT NOT NULL,
  result_id       TEXT NOT NULL,
  created_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  expires_at      TEXT NOT NULL,
  bucket          INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (key_hash, idempotency_key, bucket)
) WITHOUT ROWID;
INSERT INTO idempotency_keys_next SELECT key_hash, idempotency_key, fingerprint, result_id, created_at, expires_at, bucket
  FROM idempotency_keys;
DROP TABLE idempotency_keys;
ALTER TABLE idempotency_keys_next RENAME TO idempotency_keys;
CREATE INDEX idempotency_keys_by_expiry ON idempotency_keys (expires_at);

-- The request each Idempotency-Key of an API key was used for, kept on the key's home shard in the bucket of the key's
-- organization (so it moves with the key), 24 hours: one request per key and Idempotency-Key across the pool, where
-- idempotency_keys (on the shard of the request's resource, for the replay) holds one per shard.
CREATE TABLE idempotency_key_requests (
  key_hash        TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  fingerprint     TEXT NOT NULL,
  bucket          INTEGER NOT NULL,
  created_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  expires_at      TEXT NOT NULL,
  PRIMARY KEY (key_hash, idempotency_key, bucket)
) WITHOUT ROWID;
CREATE INDEX idempotency_key_requests_by_expiry ON idempotency_key_requests (expires_at);
