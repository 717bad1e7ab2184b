-- The pool's directory (docs/SHARDING.md §1): what is global across the shards. Shards hold whole organizations;
-- the directory knows every user, and which organizations each belongs to, so that lists find the shards to ask.

-- Every user: the authority on unique usernames and emails (each shard holds copies of its users' rows).
-- pending_until is set while a creation is claimed and not yet confirmed on its shard (§3.3), NULL once confirmed.
CREATE TABLE users (
  id            TEXT PRIMARY KEY,
  username      TEXT NOT NULL UNIQUE,
  email         TEXT NOT NULL UNIQUE COLLATE NOCASE,
  created_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  pending_until TEXT
);

-- Which organizations each user belongs to: a superset of the shards' organization_members, never the authority
-- (inserted before a membership is added on its shard, deleted after it is removed).
CREATE TABLE memberships (
  user_id         TEXT NOT NULL,
  organization_id TEXT NOT NULL,
  PRIMARY KEY (user_id, organization_id)
) WITHOUT ROWID;

-- The move command's resumable state (§5): buckets bucket_from..bucket_to (inclusive) from shard `source` to shard
-- `destination`; `checksums` is the verify step's per-table counts and digests (JSON).
CREATE TABLE bucket_moves (
  bucket_from INTEGER NOT NULL CHECK (bucket_from BETWEEN 0 AND 1023),
  bucket_to   INTEGER NOT NULL CHECK (bucket_to BETWEEN bucket_from AND 1023),
  source      TEXT NOT NULL,
  destination TEXT NOT NULL CHECK (destination <> source),
  state       TEXT NOT NULL,
  checksums   TEXT,
  started_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  updated_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  PRIMARY KEY (bucket_from, bucket_to)
);
