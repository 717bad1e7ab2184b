-- A webhook attempt is keyed by its delivery and its number among the delivery's attempts (1, 2, ...), not by a rowid:
-- a rowid is minted per shard, so a bucket move, which copies rows as they are, met the destination's own attempts under
-- the same ids (UNIQUE constraint failed). The delivery's id is a UUID of its organization's bucket: the key is the same
-- on every shard. Attempts keep their order (their old ids').
CREATE TABLE numbered_webhook_attempts (
  delivery_id      TEXT NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
  attempt          INTEGER NOT NULL CHECK (attempt >= 1),
  attempted_at     TEXT NOT NULL,
  status_code      INTEGER,
  duration_ms      INTEGER NOT NULL,
  -- The first 1 KiB of the response body.
  response_excerpt TEXT,
  error            TEXT,
  PRIMARY KEY (delivery_id, attempt)
) WITHOUT ROWID;

INSERT INTO numbered_webhook_attempts
  (delivery_id, attempt, attempted_at, status_code, duration_ms, response_excerpt, error)
SELECT delivery_id, ROW_NUMBER() OVER (PARTITION BY delivery_id ORDER BY id), attempted_at, status_code, duration_ms,
       response_excerpt, error
  FROM webhook_attempts;

DROP TABLE webhook_attempts;
ALTER TABLE numbered_webhook_attempts RENAME TO webhook_attempts;
