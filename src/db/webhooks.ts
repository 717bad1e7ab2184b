import { v7 as uuidv7 } from "uuid";
import { batchAsCaller, CALLER_CTE, type Caller } from "./caller";
import type { Queryable } from "./d1";
import { EVENT_ACTOR, EVENT_HANDOFF, INSERT_EVENT, ORGANIZATION_SCOPE, organizationReadRole, organizationRole } from "./events";
import { ADMIN_ROLES_SQL, type AdminRefusal, adminRefusal } from "./roles";

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
 * The webhook ?3 and the caller's role in its organization (none: not a member, or no such webhook): the role it
 * acts in, and the role it reads in (its user's, with a read-only key too).
 */
const HOOK_SCOPE = `hook AS (
  SELECT w.*, (SELECT role FROM membership WHERE organization_id = w.organization_id) AS role,
         (SELECT read_role FROM membership WHERE organization_id = w.organization_id) AS read_role
    FROM webhooks w WHERE w.id = ?3)`;

/** The caller's role in the webhook's organization (a batch's first statement, for `adminRefusal`). */
const hookRole = (db: Queryable, caller: Caller, id: string) =>
  db.prepare(`WITH ${CALLER_CTE}, ${HOOK_SCOPE} SELECT role FROM hook`).bind(...caller.credentials, id);

/** The same for a read. */
const hookReadRole = (db: Queryable, caller: Caller, id: string) =>
  db.prepare(`WITH ${CALLER_CTE}, ${HOOK_SCOPE} SELECT read_role AS role FROM hook`).bind(...caller.credentials, id);

const selectWebhook = (db: Queryable, id: string) =>
  db.prepare(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks w WHERE w.id = ?1`).bind(id);

/** The organization an app ?4 is in. */
const APP_ORGANIZATION = `(SELECT ws.organization_id FROM apps a JOIN projects p ON p.id = a.project_id
  JOIN workspaces ws ON ws.id = p.workspace_id WHERE a.id = ?4)`;

/** A webhook event (`webhook.*`) about the webhook in `hook`, by the caller; ?5 is its id. */
const HOOK_EVENT = `${INSERT_EVENT}
  SELECT ?5, ?6, hook.organization_id, NULL, NULL, NULL, ${EVENT_ACTOR}, json_object('webhook_id', hook.id, 'url', hook.url)`;

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

export async function createWebhook(
  db: Queryable,
  caller: Caller,
  hook: NewWebhook,
): Promise<
  { outcome: "done"; webhook: Webhook } | { outcome: "app_not_found" } | { outcome: "webhook_limit_reached" } | AdminRefusal
> {
  const id = uuidv7();
  const allowed = `(SELECT id FROM scope WHERE role IN ${ADMIN_ROLES_SQL})`;
  const appOk = `(?4 IS NULL OR ${APP_ORGANIZATION} = (SELECT id FROM scope))`;
  // ?10: WEBHOOKS_PER_ORGANIZATION, counted in the batch (a transaction): two creations at once cannot both pass.
  const roomLeft = `(SELECT count(*) FROM webhooks WHERE organization_id = (SELECT id FROM scope)) < ?10`;
  const bind = [
    ...caller.credentials,
    hook.organizationId,
    hook.appId,
    id,
    hook.url,
    JSON.stringify(hook.events),
    hook.description,
    hook.secret,
    WEBHOOKS_PER_ORGANIZATION,
  ];
  const [scope, check, , , created] = await batchAsCaller(db, caller, [
    organizationRole(db, caller, hook.organizationId),
    db.prepare(`WITH ${CALLER_CTE}, ${ORGANIZATION_SCOPE} SELECT ${appOk} AS app_ok, ${roomLeft} AS room_left`).bind(...bind),
    db
      .prepare(
        `WITH ${CALLER_CTE}, ${ORGANIZATION_SCOPE}
         INSERT INTO webhooks (id, organization_id, url, events, app_id, description, secret)
         SELECT ?5, ${allowed}, ?6, ?7, ?4, ?8, ?9 WHERE ${allowed} IS NOT NULL AND ${appOk} AND ${roomLeft}`,
      )
      .bind(...bind),
    db
      .prepare(`WITH ${CALLER_CTE}, ${HOOK_SCOPE} ${HOOK_EVENT} FROM hook ${EVENT_HANDOFF}`)
      .bind(...caller.credentials, id, null, uuidv7(), "webhook.created"),
    selectWebhook(db, id),
  ]);
  const refused = adminRefusal(scope);
  if (refused) return refused;
  const { app_ok, room_left } = check.results[0] as { app_ok: number; room_left: number };
  if (!app_ok) return { outcome: "app_not_found" };
  if (!room_left) return { outcome: "webhook_limit_reached" };
  return { outcome: "done", webhook: toWebhook(created.results[0] as WebhookRow) };
}

export async function listWebhooks(
  db: Queryable,
  caller: Caller,
  organizationId: string | null,
): Promise<{ outcome: "done"; webhooks: Webhook[] } | AdminRefusal> {
  const [scope, rows] = await batchAsCaller(db, caller, [
    organizationReadRole(db, caller, organizationId),
    db
      .prepare(
        `WITH ${CALLER_CTE}, ${ORGANIZATION_SCOPE}
         SELECT ${WEBHOOK_COLUMNS} FROM webhooks w
          WHERE w.organization_id = (SELECT id FROM scope WHERE read_role IN ${ADMIN_ROLES_SQL}) ORDER BY w.id`,
      )
      .bind(...caller.credentials, organizationId),
  ]);
  const refused = adminRefusal(scope);
  if (refused) return refused;
  return { outcome: "done", webhooks: (rows.results as unknown as WebhookRow[]).map(toWebhook) };
}

export async function getWebhook(
  db: Queryable,
  caller: Caller,
  id: string,
): Promise<{ outcome: "done"; webhook: Webhook } | AdminRefusal> {
  const [scope, row] = await batchAsCaller(db, caller, [hookReadRole(db, caller, id), selectWebhook(db, id)]);
  return adminRefusal(scope) ?? { outcome: "done", webhook: toWebhook(row.results[0] as WebhookRow) };
}

/** What a PATCH changes: a field left out keeps its value; `app_id` and `description` may be set to null. */
export interface WebhookChanges {
  url?: string;
  events?: string[];
  app_id?: string | null;
  description?: string | null;
  enabled?: boolean;
}

/** The caller may manage the webhook (HOOK_SCOPE) and the app named (?4) is the organization's. */
const MAY_CHANGE = `(SELECT role FROM hook) IN ${ADMIN_ROLES_SQL}
  AND (?4 IS NULL OR ${APP_ORGANIZATION} = (SELECT organization_id FROM hook))`;

/**
 * Changes a webhook (?7: the changes as JSON). Enabling a disabled one clears its failure count; disabling one ends
 * its pending deliveries as failed.
 */
export async function updateWebhook(
  db: Queryable,
  caller: Caller,
  id: string,
  changes: WebhookChanges,
): Promise<{ outcome: "done"; webhook: Webhook } | { outcome: "app_not_found" } | AdminRefusal> {
  const appId = changes.app_id ?? null;
  const bind = [...caller.credentials, id, appId, uuidv7(), "webhook.updated", JSON.stringify(changes)];
  const [scope, app, , , , updated] = await batchAsCaller(db, caller, [
    hookRole(db, caller, id),
    db.prepare(`WITH ${CALLER_CTE}, ${HOOK_SCOPE} SELECT ${MAY_CHANGE} AS ok`).bind(...caller.credentials, id, appId),
    db
      .prepare(
        `WITH ${CALLER_CTE}, ${HOOK_SCOPE}
         UPDATE webhooks SET
           url = COALESCE(json_extract(?7, '$.url'), url),
           events = COALESCE(json_extract(?7, '$.events'), events),
           app_id = CASE WHEN json_type(?7, '$.app_id') IS NULL THEN app_id ELSE ?4 END,
           description = CASE WHEN json_type(?7, '$.description') IS NULL THEN description ELSE json_extract(?7, '$.description') END,
           enabled = COALESCE(json_extract(?7, '$.enabled'), enabled),
           disabled_reason = CASE WHEN json_extract(?7, '$.enabled') IS NULL THEN disabled_reason END,
           failing_since = CASE WHEN json_extract(?7, '$.enabled') = 1 AND enabled = 0 THEN NULL ELSE failing_since END,
           failed_events = CASE WHEN json_extract(?7, '$.enabled') = 1 AND enabled = 0 THEN 0 ELSE failed_events END,
           updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
         WHERE id = ?3 AND ${MAY_CHANGE}`,
      )
      .bind(...bind),
    db
      .prepare(
        `WITH ${CALLER_CTE}, ${HOOK_SCOPE}
         UPDATE webhook_deliveries SET status = 'failed', last_error = 'webhook disabled', next_attempt_at = NULL
          WHERE webhook_id = ?3 AND status = 'pending' AND (SELECT enabled FROM hook) = 0 AND ${MAY_CHANGE}`,
      )
      .bind(...bind.slice(0, 4)),
    db
      .prepare(`WITH ${CALLER_CTE}, ${HOOK_SCOPE} ${HOOK_EVENT} FROM hook WHERE ${MAY_CHANGE} ${EVENT_HANDOFF}`)
      .bind(...bind.slice(0, 6)),
    selectWebhook(db, id),
  ]);
  const refused = adminRefusal(scope);
  if (refused) return refused;
  if (!(app.results[0] as { ok: number }).ok) return { outcome: "app_not_found" };
  return { outcome: "done", webhook: toWebhook(updated.results[0] as WebhookRow) };
}

/** Deletes a webhook, its deliveries and their attempts; the event names what it was. */
export async function deleteWebhook(db: Queryable, caller: Caller, id: string): Promise<{ outcome: "done" } | AdminRefusal> {
  const bind = [...caller.credentials, id, null, uuidv7(), "webhook.deleted"];
  const [scope] = await batchAsCaller(db, caller, [
    hookRole(db, caller, id),
    db.prepare(`WITH ${CALLER_CTE}, ${HOOK_SCOPE} ${HOOK_EVENT} FROM hook WHERE ${MAY_CHANGE} ${EVENT_HANDOFF}`).bind(...bind),
    db
      .prepare(
        `WITH ${CALLER_CTE}, ${HOOK_SCOPE} DELETE FROM webhooks WHERE id = ?3 AND (SELECT role FROM hook) IN ${ADMIN_ROLES_SQL}`,
      )
      .bind(...caller.credentials, id),
  ]);
  return adminRefusal(scope) ?? { outcome: "done" };
}

/** A new secret (sealed); the previous one keeps signing for 24 hours. */
export async function rotateWebhookSecret(
  db: Queryable,
  caller: Caller,
  id: string,
  sealedSecret: string,
): Promise<{ outcome: "done" } | AdminRefusal> {
  const bind = [...caller.credentials, id, null, uuidv7(), "webhook.secret_rotated", sealedSecret];
  const [scope] = await batchAsCaller(db, caller, [
    hookRole(db, caller, id),
    db
      .prepare(
        `WITH ${CALLER_CTE}, ${HOOK_SCOPE}
         UPDATE webhooks SET previous_secret = secret, secret = ?7,
                previous_secret_expires_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+24 hours'),
                updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
          WHERE id = ?3 AND ${MAY_CHANGE}`,
      )
      .bind(...bind),
    db
      .prepare(`WITH ${CALLER_CTE}, ${HOOK_SCOPE} ${HOOK_EVENT} FROM hook WHERE ${MAY_CHANGE} ${EVENT_HANDOFF}`)
      .bind(...bind.slice(0, 6)),
  ]);
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

/** A webhook's target, for a test delivery by the caller. */
export async function webhookTarget(
  db: Queryable,
  caller: Caller,
  id: string,
): Promise<{ outcome: "done"; target: Target; organizationId: string; username: string } | AdminRefusal> {
  const [scope, row] = await batchAsCaller(db, caller, [
    hookRole(db, caller, id),
    db
      .prepare(
        `WITH ${CALLER_CTE} SELECT ${TARGET_COLUMNS}, w.organization_id,
                (SELECT username FROM users WHERE id = (SELECT user_id FROM caller)) AS username
           FROM webhooks w WHERE w.id = ?3`,
      )
      .bind(...caller.credentials, id),
  ]);
  const refused = adminRefusal(scope);
  if (refused) return refused;
  const { organization_id, username, ...target } = row.results[0] as unknown as Target & {
    organization_id: string;
    username: string;
  };
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

/**
 * A webhook's deliveries, newest first, after the cursor (a delivery id), at most `limit`, and whether more follow.
 * The cursor is one bound on the index (webhook_id, created_at, id) (without one: '~', after everything).
 */
export async function listDeliveries(
  db: Queryable,
  caller: Caller,
  id: string,
  filter: { status: DeliveryStatus | null; cursor: string | null; limit: number },
): Promise<{ outcome: "done"; deliveries: Delivery[]; more: boolean } | AdminRefusal> {
  const [scope, rows] = await batchAsCaller(db, caller, [
    hookReadRole(db, caller, id),
    db
      .prepare(
        `WITH ${CALLER_CTE}, ${HOOK_SCOPE}
         SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
          WHERE d.webhook_id = (SELECT id FROM hook WHERE read_role IN ${ADMIN_ROLES_SQL})
            AND (?4 IS NULL OR d.status = ?4)
            AND (d.created_at, d.id) < (SELECT created_at, id FROM webhook_deliveries WHERE id = ?5 UNION ALL SELECT '~', '~' LIMIT 1)
          ORDER BY d.created_at DESC, d.id DESC LIMIT ?6`,
      )
      .bind(...caller.credentials, id, filter.status, filter.cursor, filter.limit + 1),
  ]);
  const refused = adminRefusal(scope);
  if (refused) return refused;
  const found = rows.results as unknown as Delivery[];
  return { outcome: "done", deliveries: found.slice(0, filter.limit), more: found.length > filter.limit };
}

export interface Attempt {
  attempted_at: string;
  status_code: number | null;
  duration_ms: number;
  response_excerpt: string | null;
  error: string | null;
}

/** One delivery and its attempts, oldest first. */
export async function getDelivery(
  db: Queryable,
  caller: Caller,
  id: string,
  deliveryId: string,
): Promise<
  { outcome: "done"; delivery: Delivery & { attempt_log: Attempt[] } } | { outcome: "delivery_not_found" } | AdminRefusal
> {
  const [scope, delivery, attempts] = await batchAsCaller(db, caller, [
    hookReadRole(db, caller, id),
    db
      .prepare(
        `WITH ${CALLER_CTE}, ${HOOK_SCOPE}
         SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
          WHERE d.id = ?4 AND d.webhook_id = (SELECT id FROM hook WHERE read_role IN ${ADMIN_ROLES_SQL})`,
      )
      .bind(...caller.credentials, id, deliveryId),
    db
      .prepare(
        `WITH ${CALLER_CTE}, ${HOOK_SCOPE}
         SELECT t.attempted_at, t.status_code, t.duration_ms, t.response_excerpt, t.error
           FROM webhook_attempts t JOIN webhook_deliveries d ON d.id = t.delivery_id
          WHERE d.id = ?4 AND d.webhook_id = (SELECT id FROM hook WHERE read_role IN ${ADMIN_ROLES_SQL}) ORDER BY t.id`,
      )
      .bind(...caller.credentials, id, deliveryId),
  ]);
  const refused = adminRefusal(scope);
  if (refused) return refused;
  const found = delivery.results[0] as unknown as Delivery | undefined;
  if (!found) return { outcome: "delivery_not_found" };
  return { outcome: "done", delivery: { ...found, attempt_log: attempts.results as unknown as Attempt[] } };
}

/** Makes a delivery pending again, due now (one more attempt); refused while the webhook is disabled. */
export async function redeliver(
  db: Queryable,
  caller: Caller,
  id: string,
  deliveryId: string,
): Promise<{ outcome: "done"; delivery: Delivery } | { outcome: "delivery_not_found" | "disabled" } | AdminRefusal> {
  const [scope, enabled, , delivery] = await batchAsCaller(db, caller, [
    hookRole(db, caller, id),
    db.prepare("SELECT enabled FROM webhooks WHERE id = ?1").bind(id),
    db
      .prepare(
        `WITH ${CALLER_CTE}, ${HOOK_SCOPE}
         UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
                leased_until = NULL, lease = NULL
          WHERE id = ?4 AND webhook_id = (SELECT id FROM hook WHERE role IN ${ADMIN_ROLES_SQL} AND enabled = 1)`,
      )
      .bind(...caller.credentials, id, deliveryId),
    db
      .prepare(
        `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d JOIN events e ON e.id = d.event_id WHERE d.id = ?1 AND d.webhook_id = ?2`,
      )
      .bind(deliveryId, id),
  ]);
  const refused = adminRefusal(scope);
  if (refused) return refused;
  const found = delivery.results[0] as unknown as Delivery | undefined;
  if (!found) return { outcome: "delivery_not_found" };
  if ((enabled.results[0] as { enabled: number }).enabled !== 1) return { outcome: "disabled" };
  return { outcome: "done", delivery: found };
}
