import { APP_ROLE } from "../apps/apps.sql.ts";
import { APP_PLACE, VARIANT_DATA } from "../core/change-events.sql.ts";
import { NAMED_BY_REFS } from "../core/refs.sql.ts";
import { newId } from "../db/buckets";
import { CALLER_CTE } from "../db/caller";
import { EVENT_ACTOR, EVENT_HANDOFF, INSERT_EVENT } from "../db/event-writes";
import type { CallerDb, CallerWriteDb } from "../db/handles";
import { batchClaimed, type IdempotencyClaim } from "../db/idempotency";
import { WRITER_ROLES_SQL } from "../db/roles";
import { sql } from "../db/sql";
import { APP_BY_ID_CTE, APP_OF_VARIANT_CTE, type WriteOutcome, writeOutcome } from "../db/visibility";
import type { ListedRef } from "../http/current-api";

/** A variant as the current API shows it (docs/CURRENT-SDK-API.md's Variant). */
export interface VariantRow {
  id: string;
  /** Its config name. */
  slug: string;
  appId: string;
  appName: string;
  createdAt: string;
  /** The author of its revision 1 (null before its first commit: variants keep no author of their own). */
  createdById: string | null;
  /** When its latest revision was made, else when it was. */
  updatedAt: string;
  archivedAt: string | null;
}

/** VariantRow of each variant `v` of app `a`. */
const VARIANTS = `SELECT v.id, v.name AS slug, a.id AS appId, a.name AS appName, v.created_at AS createdAt,
       (SELECT modified_by FROM app_variant_revisions WHERE variant_id = v.id AND revision = 1) AS createdById,
       COALESCE((SELECT created_at FROM app_variant_revisions WHERE variant_id = v.id ORDER BY revision DESC LIMIT 1), v.created_at)
         AS updatedAt,
       v.archived_at AS archivedAt
  FROM app_variants v JOIN apps a ON a.id = v.app_id`;

/** Variant :variant_id as the caller sees it: archived or not (an id still resolves), never a removed one. */
const VARIANT = sql<VariantRow>(
  `WITH ${CALLER_CTE}, ${APP_OF_VARIANT_CTE} ${VARIANTS}
    WHERE v.id = :variant_id AND a.id = (SELECT id FROM app) AND v.removed_at IS NULL`,
);

const variantStatement = (db: CallerDb, variantId: string) => db.statement(VARIANT, { variant_id: variantId });

/** Variant `variantId` as the caller sees it; null when there is none. One round trip. */
export async function readVariant(db: CallerDb, variantId: string): Promise<VariantRow | null> {
  const { variant } = await db.batch({ variant: variantStatement(db, variantId) });
  return variant.results[0] ?? null;
}

/** What a variant query asks for: every filter optional (null: any). */
export interface VariantQuery {
  appRefs: ListedRef[] | null;
  slug: string | null;
  variantRefs: ListedRef[] | null;
  includeArchived: boolean;
}

/**
 * The variants of the apps the query names, as the caller sees them: each app ref names an app by id (any app the
 * caller can see, archived too) or by slug (in the key's project, not archived); without app refs, the apps of the
 * key's project. Removed variants never; archived ones (and the variants of archived apps of the key's project) only
 * with :include_archived.
 */
const VARIANTS_QUERIED = sql<VariantRow>(
  `WITH ${CALLER_CTE},
   named AS (SELECT json_extract(value, '$.id') AS id, json_extract(value, '$.slug') AS slug FROM json_each(COALESCE(:app_refs, '[]'))),
   scope AS (
     SELECT a.id FROM named JOIN apps a
         ON a.id = COALESCE(named.id, (SELECT id FROM apps WHERE project_id = (SELECT project_id FROM caller) AND name = named.slug
                                                           AND archived_at IS NULL))
      WHERE named.slug IS NULL OR a.name = named.slug
     UNION
     SELECT a.id FROM apps a
      WHERE :app_refs IS NULL AND a.project_id = (SELECT project_id FROM caller) AND (:include_archived = 1 OR a.archived_at IS NULL)),
   visible AS (
     SELECT scope.id FROM scope JOIN apps a ON a.id = scope.id JOIN projects p ON p.id = a.project_id
       JOIN workspaces w ON w.id = p.workspace_id JOIN membership m ON m.organization_id = w.organization_id)
   ${VARIANTS} JOIN app_variants named ON named.id = v.id
    WHERE a.id IN (SELECT id FROM visible) AND v.removed_at IS NULL AND (:include_archived = 1 OR v.archived_at IS NULL)
      AND (:slug IS NULL OR v.name = :slug) AND ${NAMED_BY_REFS}
    ORDER BY v.created_at, v.id`,
);

/** The variants a query names, oldest first. One round trip. */
export async function queryVariants(db: CallerDb, query: VariantQuery): Promise<VariantRow[]> {
  const { variants } = await db.batch({
    variants: db.statement(VARIANTS_QUERIED, {
      app_refs: query.appRefs && JSON.stringify(query.appRefs),
      slug: query.slug,
      refs: query.variantRefs && JSON.stringify(query.variantRefs),
      include_archived: query.includeArchived ? 1 : 0,
    }),
  });
  return variants.results;
}

const ADD_VARIANT = sql(
  `WITH ${CALLER_CTE}, ${APP_BY_ID_CTE}
   INSERT INTO app_variants (id, app_id, name) SELECT :variant_id, id, :slug FROM app WHERE role IN ${WRITER_ROLES_SQL}`,
);

// The variant's id is new: it exists only if this batch made it. It has no revision yet: the revision's fields are null.
const VARIANT_ADDED = sql(
  `WITH ${CALLER_CTE} ${INSERT_EVENT}
   SELECT :event_id, 'config.added', w.organization_id, w.id, p.id, a.id, ${EVENT_ACTOR},
          json_object(${VARIANT_DATA}, 'revision', NULL, 'revision_id', NULL, 'message', NULL)
     FROM app_variants v JOIN apps a ON a.id = v.app_id ${APP_PLACE} WHERE v.id = :variant_id ${EVENT_HANDOFF}`,
);

/** What an add did: the variant (made, or made by the first request with its Idempotency-Key), or why none. */
export type AddVariantOutcome =
  | { outcome: "done"; variant: VariantRow; replayed: boolean }
  | { outcome: "not_found" | "forbidden" | "key_reused" };

/**
 * Adds variant `slug` to app `appId`, without a revision (its first commit makes revision 1), with its event
 * `config.added`, and reads it back: one batch. A slug the app has (a live or an archived variant's) fails it with D1's
 * UNIQUE error on `app_variants` (see `slugTakenByArchivedVariant`), which only a writer reaches.
 */
export async function addVariant(
  db: CallerWriteDb,
  appId: string,
  slug: string,
  claim: IdempotencyClaim | null,
): Promise<AddVariantOutcome> {
  const variantId = newId(db.bucket);
  const values = { app_id: appId, variant_id: variantId, slug };
  const batch = await batchClaimed(db, claim, variantId, {
    role: db.statement(APP_ROLE, values),
    variant: db.statement(ADD_VARIANT, values),
    event: db.statement(VARIANT_ADDED, { ...values, event_id: newId(db.bucket) }),
    made: variantStatement(db, variantId),
  });
  if ("reused" in batch) return { outcome: "key_reused" };
  if ("replayOf" in batch) {
    const variant = await readVariant(db, batch.replayOf);
    return variant ? { outcome: "done", variant, replayed: true } : { outcome: "not_found" };
  }
  const { role, made } = batch.ran;
  const outcome = writeOutcome(role, made);
  return outcome === "done" ? { outcome, variant: made.results[0], replayed: false } : { outcome };
}

const ARCHIVED_NAMESAKE = sql<{ archived: number }>(
  `WITH ${CALLER_CTE}, ${APP_BY_ID_CTE}
   SELECT v.archived_at IS NOT NULL AS archived FROM app JOIN app_variants v ON v.app_id = app.id AND v.name = :slug`,
);

/** Whether the variant holding `slug` in app `appId` is archived: one more round trip, on the path of a 409 only. */
export async function slugTakenByArchivedVariant(db: CallerDb, appId: string, slug: string): Promise<boolean> {
  const { namesake } = await db.batch({ namesake: db.statement(ARCHIVED_NAMESAKE, { app_id: appId, slug }) });
  return namesake.results[0]?.archived === 1;
}

const VARIANT_ROLE = sql(
  `WITH ${CALLER_CTE}, ${APP_OF_VARIANT_CTE} SELECT role FROM app JOIN app_variants v ON v.id = :variant_id AND v.removed_at IS NULL`,
);

/** Whether the caller may archive or unarchive variant :variant_id (after CALLER_CTE and APP_OF_VARIANT_CTE). */
const ARCHIVABLE = `v.id = :variant_id AND v.removed_at IS NULL AND (SELECT role FROM app) IN ${WRITER_ROLES_SQL}`;

// Before the change, which it is conditioned like: archiving an archived variant (or the reverse) changes nothing.
const ARCHIVE_EVENT = sql(
  `WITH ${CALLER_CTE}, ${APP_OF_VARIANT_CTE} ${INSERT_EVENT}
   SELECT :event_id, CASE WHEN :archive = 1 THEN 'config.archived' ELSE 'config.unarchived' END, w.organization_id, w.id, p.id,
          a.id, ${EVENT_ACTOR}, json_object(${VARIANT_DATA})
     FROM app_variants v JOIN apps a ON a.id = v.app_id ${APP_PLACE}
    WHERE ${ARCHIVABLE} AND (v.archived_at IS NULL) = (:archive = 1) ${EVENT_HANDOFF}`,
);

const SET_ARCHIVED = sql(
  `WITH ${CALLER_CTE}, ${APP_OF_VARIANT_CTE}
   UPDATE app_variants AS v
      SET archived_at = CASE WHEN :archive = 0 THEN NULL ELSE COALESCE(archived_at, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) END
    WHERE ${ARCHIVABLE} RETURNING id`,
);

/** What an archive or unarchive did, and the variant as it is after it (null: not found). */
export interface VariantWrite {
  outcome: WriteOutcome;
  variant: VariantRow | null;
}

/**
 * Archives variant `variantId` (`archive`), or unarchives it: one batch with its event, when it changes. An archived
 * variant leaves lists and lookups by name in both APIs, and is not deployed again until unarchived; environments
 * that run it keep it (and say so); its id and its revisions' ids still resolve.
 */
export async function setVariantArchived(db: CallerWriteDb, variantId: string, archive: boolean): Promise<VariantWrite> {
  const values = { variant_id: variantId, archive: archive ? 1 : 0 };
  const { role, changed, variant } = await db.batch({
    role: db.statement(VARIANT_ROLE, values),
    event: db.statement(ARCHIVE_EVENT, { ...values, event_id: newId(db.bucket) }),
    changed: db.statement(SET_ARCHIVED, values),
    variant: variantStatement(db, variantId),
  });
  return { outcome: writeOutcome(role, changed), variant: variant.results[0] ?? null };
}
