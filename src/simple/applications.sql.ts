import { createAppStatements, KEY_PROJECT, renameStatements } from "../apps/apps.sql.ts";
import {
  APP_GATE_CTES,
  type GatedOutcome,
  type GateFacts,
  gatedOutcome,
  gateStatements,
  INSERT_BYPASS_EVENTS,
  MAY_WRITE_APP,
  SELECT_GATE_FACTS,
} from "../core/app-protection.sql.ts";
import { APP_PLACE } from "../core/change-events.sql.ts";
import { NAMED_BY_REFS } from "../core/refs.sql.ts";
import { newId } from "../db/buckets";
import { CALLER_CTE } from "../db/caller";
import { EVENT_ACTOR, EVENT_HANDOFF, INSERT_EVENT } from "../db/event-writes";
import type { CallerDb, CallerWriteDb } from "../db/handles";
import { batchClaimed, type IdempotencyClaim } from "../db/idempotency";
import { sql } from "../db/sql";
import { APP_BY_ID_CTE } from "../db/visibility";
import type { ListedRef } from "../http/current-api";

/** An app as the current API shows it (a SimpleApplication: docs/CURRENT-SDK-API.md). */
export interface SimpleAppRow {
  id: string;
  name: string;
  createdAt: string;
  /** When it was last renamed, else created. */
  updatedAt: string;
  createdById: string;
  archivedAt: string | null;
  /** Its oldest variant in lists (neither removed nor archived), and that variant's latest revision. */
  variantId: string | null;
  revisionId: string | null;
}

const OLDEST_LISTED_VARIANT = `(SELECT v.id FROM app_variants v WHERE v.app_id = a.id AND v.removed_at IS NULL AND v.archived_at IS NULL
                                ORDER BY v.created_at, v.id LIMIT 1)`;

/** SimpleAppRow of each app `a`. */
const SIMPLE_APPS = `SELECT a.id, a.name, a.created_at AS createdAt, COALESCE(a.updated_at, a.created_at) AS updatedAt,
       a.created_by AS createdById, a.archived_at AS archivedAt, ${OLDEST_LISTED_VARIANT} AS variantId,
       (SELECT r.id FROM app_variant_revisions r WHERE r.variant_id = ${OLDEST_LISTED_VARIANT} ORDER BY r.revision DESC LIMIT 1)
         AS revisionId
  FROM apps a`;

/** App :app_id as the caller sees it (archived or not: an id still resolves). */
const SIMPLE_APP = sql<SimpleAppRow>(`WITH ${CALLER_CTE}, ${APP_BY_ID_CTE} ${SIMPLE_APPS} WHERE a.id = (SELECT id FROM app)`);

const simpleApp = (db: CallerDb, appId: string) => db.statement(SIMPLE_APP, { app_id: appId });

/** App `appId` as the caller sees it; null when there is none. One round trip. */
export async function readSimpleApp(db: CallerDb, appId: string): Promise<SimpleAppRow | null> {
  const { app } = await db.batch({ app: simpleApp(db, appId) });
  return app.results[0] ?? null;
}

/** What a query asks for: every filter optional (null: any). */
export interface SimpleAppQuery {
  slug: string | null;
  refs: ListedRef[] | null;
  includeArchived: boolean;
}

// The key's project, when the caller is a member of its organization.
const SIMPLE_APPS_OF_KEY_PROJECT = sql<SimpleAppRow>(
  `WITH ${CALLER_CTE},
   project AS (
     SELECT p.id FROM projects p JOIN workspaces w ON w.id = p.workspace_id
       JOIN membership m ON m.organization_id = w.organization_id
      WHERE p.id = (SELECT project_id FROM caller))
   ${SIMPLE_APPS} JOIN apps named ON named.id = a.id
    WHERE a.project_id = (SELECT id FROM project) AND (:include_archived = 1 OR a.archived_at IS NULL)
      AND (:slug IS NULL OR a.name = :slug) AND ${NAMED_BY_REFS}
    ORDER BY a.created_at, a.id`,
);

/** The apps of the key's project that the query names, oldest first; archived ones only when it asks. One round trip. */
export async function querySimpleApps(db: CallerDb, query: SimpleAppQuery): Promise<SimpleAppRow[]> {
  const { apps } = await db.batch({
    apps: db.statement(SIMPLE_APPS_OF_KEY_PROJECT, {
      slug: query.slug,
      refs: query.refs && JSON.stringify(query.refs),
      include_archived: query.includeArchived ? 1 : 0,
    }),
  });
  return apps.results;
}

/** What a create did: the app (made, or made by the first request with its Idempotency-Key), or why none. */
export type SimpleCreateOutcome =
  | { outcome: "created"; app: SimpleAppRow; replayed: boolean }
  | { outcome: "forbidden" | "key_reused" };

/**
 * Creates app `name` in the key's project (with its environments and its event, as POST /apps does) and reads it back:
 * one batch. A name taken in the project fails it with D1's UNIQUE error on `apps` (see `nameTakenByArchivedApp`).
 */
export async function createSimpleApp(
  db: CallerWriteDb,
  name: string,
  claim: IdempotencyClaim | null,
): Promise<SimpleCreateOutcome> {
  const appId = newId(db.bucket);
  const batch = await batchClaimed(db, claim, appId, {
    ...createAppStatements(db, appId, name, KEY_PROJECT),
    made: simpleApp(db, appId),
  });
  if ("reused" in batch) return { outcome: "key_reused" };
  if ("replayOf" in batch) {
    const app = await readSimpleApp(db, batch.replayOf);
    return app ? { outcome: "created", app, replayed: true } : { outcome: "forbidden" };
  }
  const app = batch.ran.made.results[0];
  // Refused by the database: the caller may not create in the key's project (a viewer, a read-only key).
  return app ? { outcome: "created", app, replayed: false } : { outcome: "forbidden" };
}

const ARCHIVED_NAMESAKE = sql<{ archived: number }>(
  `WITH ${CALLER_CTE}
   SELECT a.archived_at IS NOT NULL AS archived FROM apps a
    WHERE a.project_id = COALESCE((SELECT project_id FROM apps WHERE id = :app_id), (SELECT project_id FROM caller))
      AND a.name = :name`,
);

/**
 * Whether the app that holds `name` in the project of app `appId` (null: the key's project) is archived: one more
 * round trip, on the path of a 409 only, which only a caller allowed to write there reaches.
 */
export async function nameTakenByArchivedApp(db: CallerDb, name: string, appId: string | null): Promise<boolean> {
  const { namesake } = await db.batch({ namesake: db.statement(ARCHIVED_NAMESAKE, { app_id: appId, name }) });
  return namesake.results[0]?.archived === 1;
}

/** What a write on one app did: its outcome (a protected environment's refusal too), and the app as it is after it. */
export interface SimpleWrite {
  outcome: GatedOutcome;
  app: SimpleAppRow | null;
}

/**
 * Renames app `appId` to `name` (POST /apps's rules, checked by the route; the same write as PATCH /apps/{app_id},
 * gated alike by the app's protected environments).
 */
export async function renameSimpleApp(
  db: CallerWriteDb,
  appId: string,
  name: string,
  bypassReason: string | null,
): Promise<SimpleWrite> {
  const { facts, renamed, app } = await db.batch({
    ...renameStatements(db, appId, name, bypassReason),
    app: simpleApp(db, appId),
  });
  return { outcome: gatedOutcome(facts, renamed, appId), app: app.results[0] ?? null };
}

/**
 * An archive's (or an unarchive's) gate (src/core/app-protection.sql.ts): it changes the app when the app is not
 * already so, and with it what a lookup by name finds.
 */
const ARCHIVE_CTES = `${CALLER_CTE}, ${APP_BY_ID_CTE},
  change AS (SELECT (archived_at IS NULL) = (:archive = 1) AS changes FROM apps WHERE id = (SELECT id FROM app)), ${APP_GATE_CTES}`;
const ARCHIVE_GATE = {
  facts: sql<GateFacts>(`WITH ${ARCHIVE_CTES} ${SELECT_GATE_FACTS}`),
  bypassed: sql(`WITH ${ARCHIVE_CTES} ${INSERT_BYPASS_EVENTS}`),
};

// Before the change, which it is conditioned like: an archive of an archived app (or the reverse) changes nothing.
const ARCHIVE_EVENT = sql(
  `WITH ${ARCHIVE_CTES} ${INSERT_EVENT}
   SELECT :event_id, CASE WHEN :archive = 1 THEN 'app.archived' ELSE 'app.unarchived' END, w.organization_id, w.id, p.id, a.id,
          ${EVENT_ACTOR}, json_object('app_id', a.id, 'app_name', a.name)
     FROM app JOIN apps a ON a.id = app.id ${APP_PLACE}
    WHERE ${MAY_WRITE_APP} AND (a.archived_at IS NULL) = (:archive = 1) ${EVENT_HANDOFF}`,
);

const SET_ARCHIVED = sql(
  `WITH ${ARCHIVE_CTES}
   UPDATE apps SET archived_at = CASE WHEN :archive = 0 THEN NULL ELSE COALESCE(archived_at, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) END
    WHERE id = (SELECT id FROM app) AND ${MAY_WRITE_APP} RETURNING id`,
);

/**
 * Archives app `appId` (`archive`), or unarchives it: one batch with its event, when it changes. An archived app
 * leaves lists and lookups by name; its name stays taken, its id resolves, and everything under it stays as it is.
 * Either changes what the app's environments answer by name: gated as a deploy (`bypassReason`).
 */
export async function setSimpleAppArchived(
  db: CallerWriteDb,
  appId: string,
  archive: boolean,
  bypassReason: string | null,
): Promise<SimpleWrite> {
  const values = { app_id: appId, archive: archive ? 1 : 0, bypass_reason: bypassReason };
  const { facts, changed, app } = await db.batch({
    ...gateStatements(db, ARCHIVE_GATE, values),
    event: db.statement(ARCHIVE_EVENT, { ...values, event_id: newId(db.bucket) }),
    changed: db.statement(SET_ARCHIVED, values),
    app: simpleApp(db, appId),
  });
  return { outcome: gatedOutcome(facts, changed, appId), app: app.results[0] ?? null };
}
