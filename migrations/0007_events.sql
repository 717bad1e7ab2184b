-- Every change a client or the admin CLI makes is an event (EVENTS.md), written in the change's own batch: a change
-- without its event, or an event without its change, cannot exist. Events outlive what they name (an app deleted, a
-- member removed), so only the organization is a foreign key. The id is a UUIDv7: time-ordered, the audit log's cursor.
CREATE TABLE events (
  id                   TEXT PRIMARY KEY,
  type                 TEXT NOT NULL,
  occurred_at          TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  organization_id      TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  workspace_id         TEXT,
  project_id           TEXT,
  app_id               TEXT,
  actor_user_id        TEXT,
  actor_username       TEXT,
  -- Null for the admin CLI. Never a key's secret or hash.
  actor_api_key_prefix TEXT,
  data                 TEXT NOT NULL CHECK (json_valid(data) AND json_type(data) = 'object')
);
-- The audit log reads an organization's events newest first, a page at a time from a cursor (an id): by index.
CREATE INDEX events_by_organization ON events (organization_id, id);
CREATE INDEX events_by_app ON events (app_id, id) WHERE app_id IS NOT NULL;
