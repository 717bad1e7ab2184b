-- Splits (docs/SPLITS.md): an environment serving its base and a candidate revision by weight. An expand: the code
-- before it runs unchanged on it. A split's row lives while it runs; its history is its events.
CREATE TABLE environment_splits (
  id                           TEXT PRIMARY KEY,
  environment_id               TEXT NOT NULL UNIQUE REFERENCES environments (id) ON DELETE CASCADE,
  -- The environment revision running when the split began: deploys are refused while the split runs, so it stays current.
  base_environment_revision_id TEXT NOT NULL REFERENCES environment_revisions (id),
  candidate_revision_id        TEXT NOT NULL REFERENCES app_variant_revisions (id),
  weight                       INTEGER NOT NULL CHECK (weight BETWEEN 0 AND 10000),
  salt                         TEXT NOT NULL,
  -- The steps still to come, a JSON array of {weight, after_minutes}; the first is due at next_step_at.
  steps                        TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(steps) AND json_type(steps) = 'array'),
  next_step_at                 TEXT,
  promote_at_end               INTEGER NOT NULL DEFAULT 0 CHECK (promote_at_end IN (0, 1)),
  held                         INTEGER NOT NULL DEFAULT 0 CHECK (held IN (0, 1)),
  -- Sealed as webhooks' secrets are (src/webhooks/secret-box.ts): a verdict's signature is checked against it.
  verdict_secret               TEXT NOT NULL,
  -- Each weight change {at, from, to, by, user}, oldest first; the last verdict accepted {verdict, reason, at}.
  changes                      TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(changes)),
  last_verdict                 TEXT CHECK (last_verdict IS NULL OR json_valid(last_verdict)),
  -- The id of the write that last changed the row: its event finds the row by it, in the same batch.
  last_write_id                TEXT NOT NULL,
  started_at                   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  started_by                   TEXT NOT NULL REFERENCES users (id)
);
-- The minute cron's due steps.
CREATE INDEX environment_splits_due ON environment_splits (next_step_at) WHERE next_step_at IS NOT NULL AND held = 0;

-- The `webhook-id` of every verdict a split accepted: one seen again is a replay (401).
CREATE TABLE split_verdicts (
  split_id    TEXT NOT NULL REFERENCES environment_splits (id) ON DELETE CASCADE,
  webhook_id  TEXT NOT NULL,
  received_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  PRIMARY KEY (split_id, webhook_id)
) WITHOUT ROWID;
