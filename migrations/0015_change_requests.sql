-- Change requests and their reviews (docs/CHANGE-REQUESTS.md §3). An expand: the code before it runs unchanged on it.
--
-- `approved` is never stored: a request is `open` here, and reads `approved` while enough approvals count, counted
-- at every read with that moment's settings and roles. `expired` is stored by the cron; a read past `expires_at`
-- shows it before then.
CREATE TABLE change_requests (
  id                              TEXT PRIMARY KEY,
  app_id                          TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
  environment                     TEXT NOT NULL CHECK (environment IN ('development', 'staging', 'production')),
  kind                            TEXT NOT NULL CHECK (kind IN ('deploy', 'revert')),
  -- The config revision the request deploys: for a revert, the one `revert_to_revision_id` deployed.
  variant_revision_id             TEXT NOT NULL REFERENCES app_variant_revisions (id),
  revert_to_revision_id           TEXT REFERENCES environment_revisions (id),
  -- The environment when the request was made or last rebased: revision 0 and null ids when nothing was deployed.
  base_environment_revision       INTEGER NOT NULL CHECK (base_environment_revision >= 0),
  base_environment_revision_id    TEXT,
  base_variant_revision_id        TEXT,
  title                           TEXT NOT NULL,
  description                     TEXT NOT NULL DEFAULT '',
  state                           TEXT NOT NULL
                                  CHECK (state IN ('draft', 'open', 'scheduled', 'applied', 'rejected', 'cancelled', 'expired', 'failed')),
  -- Bumped by a change of the proposal or a rebase: reviews of an earlier version count for nothing.
  version                         INTEGER NOT NULL DEFAULT 1 CHECK (version >= 1),
  -- Bumped by every write: the request's ETag.
  writes                          INTEGER NOT NULL DEFAULT 1 CHECK (writes >= 1),
  author_id                       TEXT NOT NULL REFERENCES users (id),
  scheduled_at                    TEXT,
  scheduled_by                    TEXT REFERENCES users (id),
  expires_at                      TEXT NOT NULL,
  applied_at                      TEXT,
  applied_by                      TEXT REFERENCES users (id),
  applied_environment_revision_id TEXT,
  applied_scheduled               INTEGER CHECK (applied_scheduled IN (0, 1)),
  failed_at                       TEXT,
  failure_reason                  TEXT CHECK (failure_reason IN ('conflict', 'not_approved', 'revision_unavailable', 'scheduler_removed')),
  failure_detail                  TEXT CHECK (failure_detail IS NULL OR json_valid(failure_detail)),
  created_at                      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  updated_at                      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  CHECK ((kind = 'revert') = (revert_to_revision_id IS NOT NULL))
);
-- An app environment's requests (the list, the count of unfinished ones), newest first by id.
CREATE INDEX change_requests_by_app ON change_requests (app_id, environment, id);
-- The minute cron's due requests.
CREATE INDEX change_requests_scheduled ON change_requests (scheduled_at) WHERE state = 'scheduled';
-- The minute cron's expired requests (scheduled ones do not expire).
CREATE INDEX change_requests_expiring ON change_requests (expires_at) WHERE state IN ('draft', 'open', 'failed');

CREATE TABLE change_request_reviews (
  id                TEXT PRIMARY KEY,
  change_request_id TEXT NOT NULL REFERENCES change_requests (id) ON DELETE CASCADE,
  reviewer_id       TEXT NOT NULL REFERENCES users (id),
  kind              TEXT NOT NULL CHECK (kind IN ('approve', 'decline', 'comment')),
  comment           TEXT,
  -- The request's version the review was made on.
  version           INTEGER NOT NULL CHECK (version >= 1),
  created_at        TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX change_request_reviews_by_request ON change_request_reviews (change_request_id, id);
