-- Webhooks (EVENTS.md): an organization's subscriptions, one delivery per event and webhook, and its attempts.
CREATE TABLE webhooks (
  id                  TEXT PRIMARY KEY,
  organization_id     TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  url                 TEXT NOT NULL,
  -- Event types, or ["*"] for every type.
  events              TEXT NOT NULL CHECK (json_valid(events) AND json_type(events) = 'array'),
  -- Only this app's events (an app id, not a foreign key: the webhook outlives the app and hears app.deleted).
  app_id              TEXT,
  description         TEXT,
  enabled             INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
  disabled_reason     TEXT,
  -- AES-GCM under the Worker secret WEBHOOK_SECRETS_KEY: a database dump alone cannot sign.
  secret              TEXT NOT NULL,
  -- After a rotation the previous secret signs too, until previous_secret_expires_at.
  previous_secret     TEXT,
  previous_secret_expires_at TEXT,
  -- Since the last success: when deliveries began to fail, and how many events failed (auto-disable).
  failing_since       TEXT,
  failed_events       INTEGER NOT NULL DEFAULT 0,
  created_at          TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  updated_at          TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX webhooks_by_organization ON webhooks (organization_id, id);

-- One per event and subscribed webhook; its id is the `webhook-id` header of every attempt.
CREATE TABLE webhook_deliveries (
  id              TEXT PRIMARY KEY,
  webhook_id      TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
  event_id        TEXT NOT NULL REFERENCES events (id) ON DELETE CASCADE,
  status          TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed')),
  attempts        INTEGER NOT NULL DEFAULT 0,
  last_attempt_at TEXT,
  last_status_code INTEGER,
  last_error      TEXT,
  -- Pending: when the next attempt is due (the sweep queues again what is overdue). Null once settled.
  next_attempt_at TEXT DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  -- A consumer attempting it holds it until then, so that duplicate queue messages do not attempt it twice at once.
  leased_until    TEXT,
  lease           TEXT,
  created_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  UNIQUE (webhook_id, event_id)
);
CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries (webhook_id, created_at, id);
CREATE INDEX webhook_deliveries_by_event ON webhook_deliveries (event_id);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';

CREATE TABLE webhook_attempts (
  id               INTEGER PRIMARY KEY,
  delivery_id      TEXT NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
  attempted_at     TEXT NOT NULL,
  status_code      INTEGER,
  duration_ms      INTEGER NOT NULL,
  -- The first 1 KiB of the response body.
  response_excerpt TEXT,
  error            TEXT
);
CREATE INDEX webhook_attempts_by_delivery ON webhook_attempts (delivery_id, id);

-- The outbox: an event's deliveries are made with it, in the statement that inserts it (whatever route, the admin CLI
-- included), to every enabled webhook of its organization that takes its type (and its app, if it names one).
CREATE TRIGGER events_fan_out AFTER INSERT ON events
BEGIN
  INSERT INTO webhook_deliveries (id, webhook_id, event_id)
  SELECT lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-'
               || substr('89ab', 1 + (abs(random()) % 4), 1) || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6))),
         w.id, NEW.id
    FROM webhooks w
   WHERE w.organization_id = NEW.organization_id AND w.enabled = 1
     AND (w.app_id IS NULL OR w.app_id = NEW.app_id)
     AND EXISTS (SELECT 1 FROM json_each(w.events) t WHERE t.value IN ('*', NEW.type));
END;
