import { newId } from "../db/buckets";
import { CALLER_CTE } from "../db/caller";
import { EVENT_ACTOR, EVENT_HANDOFF, INSERT_EVENT } from "../db/event-writes";
import type { CallerDb, CallerWriteDb } from "../db/handles";
import { ADMIN_ROLES_SQL, type AdminRefusal, adminRefusal } from "../db/roles";
import { sql } from "../db/sql";
import { ORGANIZATION_SCOPE, organizationReadRole, organizationRole } from "../events/events.sql.ts";

/** A webhook as clients see it (never its secret). */
export interface Webhook {
  id: string;
  organization_id: string;
  url: string;
  events: string[];
  app_id: string | null;
  description: string | null;
  enabled: boolean;
  disabled_reason: string | null;
  created_at: string;
  updated_at: string;
}

const WEBHOOK_COLUMNS = `w.id, w.organization_id, w.url, w.events, w.app_id, w.description, w.enabled, w.disabled_reason,
  w.created_at, w.updated_at`;

type WebhookRow = Omit<Webhook, "events" | "enabled"> & { events: string; enabled: number };

const toWebhook = (row: WebhookRow): Webhook => ({ ...row, events: JSON.parse(row.events), enabled: row.enabled === 1 });

/**
 * The webhook :webhook_id and the caller's role in its organization (none: not a member, or no such webhook): the
 * role it acts in, and the role it reads in (its user's, with a read-only key too).
 */
const HOOK_SCOPE = `hook AS (
  SELECT w.*, (SELECT role FROM membership WHERE organization_id = w.organization_id) AS role,
         (SELECT read_role FROM membership WHERE organization_id = w.organization_id) AS read_role
    FROM webhooks w WHERE w.id = :webhook_id)`;

const HOOK_ROLE = sql(`WITH ${CALLER_CTE}, ${HOOK_SCOPE} SELECT role FROM hook`);
const HOOK_READ_ROLE = sql(`WITH ${CALLER_CTE}, ${HOOK_SCOPE} SELECT read_role AS role FROM hook`);
const WEBHOOK = sql<WebhookRow>(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks w WHERE w.id = :webhook_id`);

/** The caller's role in the webhook's organization (a batch's first statement, for `adminRefusal`). */
const hookRole = (db: CallerDb, id: string) => db.statement(HOOK_ROLE, { webhook_id: id });

/** The same for a read. */
const hookReadRole = (db: CallerDb, id: string) => db.statement(HOOK_READ_ROLE, { webhook_id: id });

/** The organization app :app_id is in. */
const APP_ORGANIZATION = `(SELECT ws.organization_id FROM apps a JOIN projects p ON p.id = a.project_id
  JOIN workspaces ws ON ws.id = p.workspace_id WHERE a.id = :app_id)`;

/** A webhook event (`webhook.*`, :event_type) about the webhook in `hook`, by the caller. */
const HOOK_EVENT = `${INSERT_EVENT}
  SELECT :event_id, :event_type, hook.organization_id, NULL, NULL, NULL, ${EVENT_ACTOR}, json_object('webhook_id', hook.id, 'url', hook.url)`;

export interface NewWebhook {
  organizationId: string | null;
  url: string;
  events: string[];
  appId: string | null;
  description: string | null;
  /** Sealed (secret-box.ts). */
  secret: string;
}

/**
 * The most webhooks an organization may have (enabled or not): each delivery run attempts a bounded number of
 * deliveries (webhooks/delivery.ts), and one event makes a delivery per webhook.
 */
export const WEBHOOKS_PER_ORGANIZATION = 20;

const ALLOWED_ORGANIZATION = `(SELECT id FROM scope WHERE role IN ${ADMIN_ROLES_SQL})`;
const APP_OK = `(:app_id IS NULL OR ${APP_ORGANIZATION} = (SELECT id FROM scope))`;
// :most is WEBHOOKS_PER_ORGANIZATION, counted in the batch (a transaction): two creations at once cannot both pass.
const ROOM_LEFT = "(SELECT count(*) FROM webhooks WHERE organization_id = (SELECT id FROM scope)) < :most";

const CREATION_CHECK = sql<{ app_ok: number; room_left: number }>(
  `WITH ${CALLER_CTE}, ${ORGANIZATION_SCOPE} SELECT ${APP_OK} AS app_ok, ${ROOM_LEFT} AS room_left`,
);
const INSERT_WEBHOOK = sql(
  `WITH ${CALLER_CTE}, ${ORGANIZATION_SCOPE}
   INSERT INTO webhooks (id, organization_id, url, events, app_id, description, secret)
   SELECT :webhook_id, ${ALLOWED_ORGANIZATION}, :url, :events, :app_id, :description, :secret
    WHERE ${ALLOWED_ORGANIZATION} IS NOT NULL AND ${APP_OK} AND ${ROOM_LEFT}`,
);
const WEBHOOK_CREATED = sql(`WITH ${CALLER_CTE}, ${HOOK_SCOPE} ${HOOK_EVENT} FROM hook ${EVENT_HANDOFF}`);

export async function createWebhook(
  db: CallerWriteDb,
  hook: NewWebhook,
): Promise<
  { outcome: "done"; webhook: Webhook } | { outcome: "app_not_found" } | { outcome: "webhook_limit_reached" } | AdminRefusal
> {
  const values = {
    organization_id: hook.organizationId,
    app_id: hook.appId,
    webhook_id: newId(db.bucket),
    url: hook.url,
    events: JSON.stringify(hook.events),
    description: hook.description,
    secret: hook.secret,
    most: WEBHOOKS_PER_ORGANIZATION,
  };
  const { scope, check, created } = await db.batch({
    scope: organizationRole(db, hook.organizationId),
    check: db.statement(CREATION_CHECK, values),
    insert: db.statement(INSERT_WEBHOOK, values),
    event: db.statement(WEBHOOK_CREATED, { ...values, event_id: newId(db.bucket), event_type: "webhook.created" }),
    created: db.statement(WEBHOOK, values),
  });
  const refused = adminRefusal(scope);
  if (refused) return refused;
  const { app_ok, room_left } = check.results[0];
  if (!app_ok) return { outcome: "app_not_found" };
  if (!room_left) return { outcome: "webhook_limit_reached" };
  return { outcome: "done", webhook: toWebhook(created.results[0]) };
}

const WEBHOOKS = sql<WebhookRow>(
  `WITH ${CALLER_CTE}, ${ORGANIZATION_SCOPE}
   SELECT ${WEBHOOK_COLUMNS} FROM webhooks w
    WHERE w.organization_id = (SELECT id FROM scope WHERE read_role IN ${ADMIN_ROLES_SQL}) ORDER BY w.id`,
);

export async function listWebhooks(
  db: CallerDb,
  organizationId: string | null,
): Promise<{ outcome: "done"; webhooks: Webhook[] } | AdminRefusal> {
  const { scope, rows } = await db.batch({
    scope: organizationReadRole(db, organizationId),
    rows: db.statement(WEBHOOKS, { organization_id: organizationId }),
  });
  const refused = adminRefusal(scope);
  if (refused) return refused;
  return { outcome: "done", webhooks: rows.results.map(toWebhook) };
}

export async function getWebhook(db: CallerDb, id: string): Promise<{ outcome: "done"; webhook: Webhook } | AdminRefusal> {
  const { scope, row } = await db.batch({ scope: hookReadRole(db, id), row: db.statement(WEBHOOK, { webhook_id: id }) });
  return adminRefusal(scope) ?? { outcome: "done", webhook: toWebhook(row.results[0]) };
}

/** What a PATCH changes: a field left out keeps its value; `app_id` and `description` may be set to null. */
export interface WebhookChanges {
  url?: string;
  events?: string[];
  app_id?: string | null;
  description?: string | null;
  enabled?: boolean;
}

/** The caller may manage the webhook (HOOK_SCOPE) and the app named (:app_id) is the organization's. */
const MAY_CHANGE = `(SELECT role FROM hook) IN ${ADMIN_ROLES_SQL}
  AND (:app_id IS NULL OR ${APP_ORGANIZATION} = (SELECT organization_id FROM hook))`;

const APP_CHECK = sql<{ ok: number }>(`WITH ${CALLER_CTE}, ${HOOK_SCOPE} SELECT ${MAY_CHANGE} AS ok`);
const UPDATE_WEBHOOK = sql(
  `WITH ${CALLER_CTE}, ${HOOK_SCOPE}
   UPDATE webhooks SET
     url = COALESCE(json_extract(:changes, '$.url'), url),
     events = COALESCE(json_extract(:changes, '$.events'), events),
     app_id = CASE WHEN json_type(:changes, '$.app_id') IS NULL THEN app_id ELSE :app_id END,
     description = CASE WHEN json_type(:changes, '$.description') IS NULL THEN description ELSE json_extract(:changes, '$.description') END,
     enabled = COALESCE(json_extract(:changes, '$.enabled'), enabled),
     disabled_reason = CASE WHEN json_extract(:changes, '$.enabled') IS NULL THEN disabled_reason END,
     failing_since = CASE WHEN json_extract(:changes, '$.enabled') = 1 AND enabled = 0 THEN NULL ELSE failing_since END,
     failed_events = CASE WHEN json_extract(:changes, '$.enabled') = 1 AND enabled = 0 THEN 0 ELSE failed_events END,
     updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
   WHERE id = :webhook_id AND ${MAY_CHANGE}`,
);
const FAIL_PENDING_OF_DISABLED = sql(
  `WITH ${CALLER_CTE}, ${HOOK_SCOPE}
   UPDATE webhook_deliveries SET status = 'failed', last_error = 'webhook disabled', next_attempt_at = NULL
    WHERE webhook_id = :webhook_id AND status = 'pending' AND (SELECT enabled FROM hook) = 0 AND ${MAY_CHANGE}`,
);
const HOOK_CHANGED = sql(`WITH ${CALLER_CTE}, ${HOOK_SCOPE} ${HOOK_EVENT} FROM hook WHERE ${MAY_CHANGE} ${EVENT_HANDOFF}`);

/**
 * Changes a webhook (:changes, as JSON). Enabling a disabled one clears its failure count; disabling one ends
 * its pending deliveries as failed.
 */
export async function updateWebhook(
  db: CallerWriteDb,
  id: string,
  changes: WebhookChanges,
): Promise<{ outcome: "done"; webhook: Webhook } | { outcome: "app_not_found" } | AdminRefusal> {
  const values = { webhook_id: id, app_id: changes.app_id ?? null, changes: JSON.stringify(changes) };
  const { scope, app, updated } = await db.batch({
    scope: hookRole(db, id),
    app: db.statement(APP_CHECK, values),
    update: db.statement(UPDATE_WEBHOOK, values),
    deliveries: db.statement(FAIL_PENDING_OF_DISABLED, values),
    event: db.statement(HOOK_CHANGED, { ...values, event_id: newId(db.bucket), event_type: "webhook.updated" }),
    updated: db.statement(WEBHOOK, values),
  });
  const refused = adminRefusal(scope);
  if (refused) return refused;
  if (!app.results[0].ok) return { outcome: "app_not_found" };
  return { outcome: "done", webhook: toWebhook(updated.results[0]) };
}

const DELETE_WEBHOOK = sql(
  `WITH ${CALLER_CTE}, ${HOOK_SCOPE} DELETE FROM webhooks WHERE id = :webhook_id AND (SELECT role FROM hook) IN ${ADMIN_ROLES_SQL}`,
);

/** Deletes a webhook, its deliveries and their attempts; the event names what it was. */
export async function deleteWebhook(db: CallerWriteDb, id: string): Promise<{ outcome: "done" } | AdminRefusal> {
  const values = { webhook_id: id, app_id: null };
  const { scope } = await db.batch({
    scope: hookRole(db, id),
    event: db.statement(HOOK_CHANGED, { ...values, event_id: newId(db.bucket), event_type: "webhook.deleted" }),
    deleted: db.statement(DELETE_WEBHOOK, values),
  });
  return adminRefusal(scope) ?? { outcome: "done" };
}

/** `deleteWebhook`'s dry-run: its refusal, or the webhook it would delete; one read, nothing written. */
export async function previewWebhookDeletion(
  db: CallerWriteDb,
  id: string,
): Promise<{ outcome: "preview"; webhook: Webhook } | AdminRefusal> {
  const { scope, webhook } = await db.batch({
    scope: hookRole(db, id),
    webhook: db.statement(WEBHOOK, { webhook_id: id }),
  });
  return adminRefusal(scope) ?? { outcome: "preview", webhook: toWebhook(webhook.results[0]) };
}

const ROTATE_SECRET = sql(
  `WITH ${CALLER_CTE}, ${HOOK_SCOPE}
   UPDATE webhooks SET previous_secret = secret, secret = :secret,
          previous_secret_expires_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+24 hours'),
          updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
    WHERE id = :webhook_id AND ${MAY_CHANGE}`,
);

/** A new secret (sealed); the previous one keeps signing for 24 hours. */
export async function rotateWebhookSecret(
  db: CallerWriteDb,
  id: string,
  sealedSecret: string,
): Promise<{ outcome: "done" } | AdminRefusal> {
  const values = { webhook_id: id, app_id: null, secret: sealedSecret };
  const { scope } = await db.batch({
    scope: hookRole(db, id),
    rotated: db.statement(ROTATE_SECRET, values),
    event: db.statement(HOOK_CHANGED, { ...values, event_id: newId(db.bucket), event_type: "webhook.secret_rotated" }),
  });
  return adminRefusal(scope) ?? { outcome: "done" };
}

/** Where to send and how to sign: the URL and the live secrets (sealed), the current one first. */
export interface Target {
  webhook_id: string;
  url: string;
  secret: string;
  /** Null once 24 hours have passed since the rotation. */
  previous_secret: string | null;
}

/** The columns of a Target, for a webhook `w` (the previous secret only while it still signs). */
export const TARGET_COLUMNS = `w.id AS webhook_id, w.url, w.secret,
  CASE WHEN w.previous_secret_expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now') THEN w.previous_secret END AS previous_secret`;

const TEST_TARGET = sql<Target & { organization_id: string; username: string }>(
  `WITH ${CALLER_CTE} SELECT ${TARGET_COLUMNS}, w.organization_id,
          (SELECT username FROM users WHERE id = (SELECT user_id FROM caller)) AS username
     FROM webhooks w WHERE w.id = :webhook_id`,
);

/** A webhook's target, for a test delivery by the caller. */
export async function webhookTarget(
  db: CallerDb,
  id: string,
): Promise<{ outcome: "done"; target: Target; organizationId: string; username: string } | AdminRefusal> {
  const { scope, row } = await db.batch({ scope: hookRole(db, id), row: db.statement(TEST_TARGET, { webhook_id: id }) });
  const refused = adminRefusal(scope);
  if (refused) return refused;
  const { organization_id, username, ...target } = row.results[0];
  return { outcome: "done", target, organizationId: organization_id, username };
}

export type DeliveryStatus = "pending" | "succeeded" | "failed";

export interface Delivery {
  id: string;
  event_id: string;
  event_type: string;
  status: DeliveryStatus;
  attempts: number;
  last_attempt_at: string | null;
  last_status_code: number | null;
  last_error: string | null;
  next_attempt_at: string | null;
}

const DELIVERY_COLUMNS = `d.id, d.event_id, e.type AS event_type, d.status, d.attempts, d.last_attempt_at, d.last_status_code,
  d.last_error, d.next_attempt_at`;

const DELIVERIES = sql<Delivery>(
  `WITH ${CALLER_CTE}, ${HOOK_SCOPE}
   SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
    WHERE d.webhook_id = (SELECT id FROM hook WHERE read_role IN ${ADMIN_ROLES_SQL})
      AND (:status IS NULL OR d.status = :status)
      AND (d.created_at, d.id) < (SELECT created_at, id FROM webhook_deliveries WHERE id = :cursor UNION ALL SELECT '~', '~' LIMIT 1)
    ORDER BY d.created_at DESC, d.id DESC LIMIT :page_rows`,
);

/**
 * A webhook's deliveries, newest first, after the cursor (a delivery id), at most `limit`, and whether more follow.
 * The cursor is one bound on the index (webhook_id, created_at, id) (without one: '~', after everything).
 */
export async function listDeliveries(
  db: CallerDb,
  id: string,
  filter: { status: DeliveryStatus | null; cursor: string | null; limit: number },
): Promise<{ outcome: "done"; deliveries: Delivery[]; more: boolean } | AdminRefusal> {
  const { scope, rows } = await db.batch({
    scope: hookReadRole(db, id),
    rows: db.statement(DELIVERIES, { webhook_id: id, status: filter.status, cursor: filter.cursor, page_rows: filter.limit + 1 }),
  });
  const refused = adminRefusal(scope);
  if (refused) return refused;
  const found = rows.results;
  return { outcome: "done", deliveries: found.slice(0, filter.limit), more: found.length > filter.limit };
}

export interface Attempt {
  attempted_at: string;
  status_code: number | null;
  duration_ms: number;
  response_excerpt: string | null;
  error: string | null;
}

const DELIVERY = sql<Delivery>(
  `WITH ${CALLER_CTE}, ${HOOK_SCOPE}
   SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
    WHERE d.id = :delivery_id AND d.webhook_id = (SELECT id FROM hook WHERE read_role IN ${ADMIN_ROLES_SQL})`,
);
const ATTEMPTS = sql<Attempt>(
  `WITH ${CALLER_CTE}, ${HOOK_SCOPE}
   SELECT t.attempted_at, t.status_code, t.duration_ms, t.response_excerpt, t.error
     FROM webhook_attempts t JOIN webhook_deliveries d ON d.id = t.delivery_id
    WHERE d.id = :delivery_id AND d.webhook_id = (SELECT id FROM hook WHERE read_role IN ${ADMIN_ROLES_SQL}) ORDER BY t.attempt`,
);

/** One delivery and its attempts, oldest first. */
export async function getDelivery(
  db: CallerDb,
  id: string,
  deliveryId: string,
): Promise<
  { outcome: "done"; delivery: Delivery & { attempt_log: Attempt[] } } | { outcome: "delivery_not_found" } | AdminRefusal
> {
  const values = { webhook_id: id, delivery_id: deliveryId };
  const { scope, delivery, attempts } = await db.batch({
    scope: hookReadRole(db, id),
    delivery: db.statement(DELIVERY, values),
    attempts: db.statement(ATTEMPTS, values),
  });
  const refused = adminRefusal(scope);
  if (refused) return refused;
  const found = delivery.results[0];
  if (!found) return { outcome: "delivery_not_found" };
  return { outcome: "done", delivery: { ...found, attempt_log: attempts.results } };
}

const WEBHOOK_ENABLED = sql<{ enabled: number }>("SELECT enabled FROM webhooks WHERE id = :webhook_id");
const REDELIVER = sql(
  `WITH ${CALLER_CTE}, ${HOOK_SCOPE}
   UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
          leased_until = NULL, lease = NULL
    WHERE id = :delivery_id AND webhook_id = (SELECT id FROM hook WHERE role IN ${ADMIN_ROLES_SQL} AND enabled = 1)`,
);
const DELIVERY_OF_WEBHOOK = sql<Delivery>(
  `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
    WHERE d.id = :delivery_id AND d.webhook_id = :webhook_id`,
);

/** Makes a delivery pending again, due now (one more attempt); refused while the webhook is disabled. */
export async function redeliver(
  db: CallerWriteDb,
  id: string,
  deliveryId: string,
): Promise<{ outcome: "done"; delivery: Delivery } | { outcome: "delivery_not_found" | "disabled" } | AdminRefusal> {
  const values = { webhook_id: id, delivery_id: deliveryId };
  const { scope, enabled, delivery } = await db.batch({
    scope: hookRole(db, id),
    enabled: db.statement(WEBHOOK_ENABLED, values),
    pending: db.statement(REDELIVER, values),
    delivery: db.statement(DELIVERY_OF_WEBHOOK, values),
  });
  const refused = adminRefusal(scope);
  if (refused) return refused;
  const found = delivery.results[0];
  if (!found) return { outcome: "delivery_not_found" };
  if (enabled.results[0].enabled !== 1) return { outcome: "disabled" };
  return { outcome: "done", delivery: found };
}
