import { APP_PLACE, VARIANT_DATA } from "../core/change-events.sql.ts";
import { newId } from "../db/buckets";
import { CALLER_CTE } from "../db/caller";
import { EVENT_ACTOR, EVENT_HANDOFF, INSERT_EVENT } from "../db/event-writes";
import { parseJsonExactly } from "../db/exact-json";
import type { CallerDb, CallerWriteDb } from "../db/handles";
import type { PagedList } from "../db/paged-list";
import { type Role, WRITER_ROLES, WRITER_ROLES_SQL } from "../db/roles";
import { sql } from "../db/sql";
import { APP_BY_ID_CTE, APP_OF_VARIANT_CTE, refusal } from "../db/visibility";

/** A variant (a named config of an app) with its latest revision. */
export interface Variant {
  id: string;
  appId: string;
  appName: string;
  projectId: string;
  configName: string;
  createdAt: string;
  /** The latest revision's number, params, time and author. */
  revision: number;
  params: Record<string, unknown>;
  updatedAt: string;
  modifiedById: string;
}

/** One revision of a variant's config. */
export interface VariantRevision {
  id: string;
  revision: number;
  configName: string;
  params: Record<string, unknown>;
  /** Username of who made the revision. */
  modifiedBy: string;
  createdAt: string;
  /** The message it was committed with, through either API (null: none). */
  commitMessage: string | null;
}

/** Variants of the CTE `app` with their latest revision, removed ones left out; `v` is the variant. */
const VARIANTS_OF_APP = `SELECT v.id, app.id AS appId, app.name AS appName, app.project_id AS projectId, v.name AS configName,
       v.created_at AS createdAt, r.revision, r.params, r.created_at AS updatedAt, r.modified_by AS modifiedById
  FROM app
  JOIN app_variants v ON v.app_id = app.id AND v.removed_at IS NULL
  JOIN app_variant_revisions r ON r.variant_id = v.id
   AND r.revision = (SELECT MAX(revision) FROM app_variant_revisions WHERE variant_id = v.id)`;

type Row<T> = Omit<T, "params"> & { params: string };

const withParams = <T extends { params: string }>(row: T) => ({
  ...row,
  params: parseJsonExactly(row.params) as Record<string, unknown>,
});

const APP_ID = sql(`WITH ${CALLER_CTE}, ${APP_BY_ID_CTE} SELECT id FROM app`);
const VARIANTS = sql<Row<Variant>>(
  `WITH ${CALLER_CTE}, ${APP_BY_ID_CTE} ${VARIANTS_OF_APP} WHERE v.archived_at IS NULL ORDER BY v.created_at, v.id`,
);

/**
 * The variants of app :app_id that have a revision, oldest first, archived ones left out (their ids still resolve);
 * null when the app is not visible to the caller.
 */
export async function listAppVariants(db: CallerDb, appId: string): Promise<Variant[] | null> {
  const values = { app_id: appId };
  const { app, variants } = await db.batch({ app: db.statement(APP_ID, values), variants: db.statement(VARIANTS, values) });
  return app.results.length > 0 ? variants.results.map(withParams) : null;
}

const VARIANT = sql<Row<Variant>>(`WITH ${CALLER_CTE}, ${APP_OF_VARIANT_CTE} ${VARIANTS_OF_APP} WHERE v.id = :variant_id`);

/** The variant, when the caller can see its app. */
export async function getVariant(db: CallerDb, variantId: string): Promise<Variant | null> {
  const { variants } = await db.batch({ variants: db.statement(VARIANT, { variant_id: variantId }) });
  return variants.results.map(withParams)[0] ?? null;
}

const ENVIRONMENT_OF_APP = sql(
  `WITH ${CALLER_CTE}, ${APP_BY_ID_CTE} SELECT e.id FROM app JOIN environments e ON e.app_id = app.id AND e.name = :environment_name`,
);
const VARIANT_DEPLOYED = sql<Row<Variant>>(
  `WITH ${CALLER_CTE}, ${APP_BY_ID_CTE} ${VARIANTS_OF_APP}
    WHERE v.id = (SELECT deployed_app_variant_id FROM environments WHERE app_id = app.id AND name = :environment_name)`,
);

/**
 * The variant deployed to environment :environment_name of app :app_id. `environmentFound` is false when the app
 * is not visible or has no such environment; `variant` is null also when nothing is deployed there.
 */
export async function getVariantDeployedTo(
  db: CallerDb,
  appId: string,
  environmentName: string,
): Promise<{ environmentFound: boolean; variant: Variant | null }> {
  const values = { app_id: appId, environment_name: environmentName };
  const { environment, variants } = await db.batch({
    environment: db.statement(ENVIRONMENT_OF_APP, values),
    variants: db.statement(VARIANT_DEPLOYED, values),
  });
  return { environmentFound: environment.results.length > 0, variant: variants.results.map(withParams)[0] ?? null };
}

/** The variant, live and visible to the caller, with its last revision's number: the bound of its list's pages. */
const LIVE_VARIANT = sql<{ lastRevision: number | null }>(
  `WITH ${CALLER_CTE}, ${APP_OF_VARIANT_CTE}
   SELECT (SELECT MAX(revision) FROM app_variant_revisions WHERE variant_id = v.id) AS lastRevision
     FROM app JOIN app_variants v ON v.app_id = app.id AND v.id = :variant_id AND v.removed_at IS NULL`,
);
/**
 * Revisions of variant :variant_id visible to the caller, by number, after :after and up to :last (null: the latest),
 * or revision :revision alone; at most :page_rows. Whether the variant is live is LIVE_VARIANT's to say, in the batch
 * of the first page: a later page goes on with the list that batch saw.
 */
const VARIANT_REVISIONS = sql<Row<VariantRevision>>(
  `WITH ${CALLER_CTE}, ${APP_OF_VARIANT_CTE}
   SELECT r.id, r.revision, v.name AS configName, r.params, u.username AS modifiedBy, r.created_at AS createdAt,
          r.message AS commitMessage
     FROM app
     JOIN app_variants v ON v.app_id = app.id AND v.id = :variant_id
     JOIN app_variant_revisions r ON r.variant_id = v.id
     JOIN users u ON u.id = r.modified_by
    WHERE (:revision IS NULL OR r.revision = :revision) AND r.revision > :after AND (:last IS NULL OR r.revision <= :last)
    ORDER BY r.revision
    LIMIT :page_rows`,
);

/**
 * Revisions per page of a variant's list: a config's params are at most 256 KB (MAX_CONFIG_BODY_BYTES), so a page
 * holds at most about 13 MB of them, whatever the history's length.
 */
export const VARIANT_REVISIONS_PAGE_ROWS = 50;

/**
 * The revisions of variant :variant_id by number ascending, in pages (PagedList): the first beside the variant's check
 * (one round trip for a history of up to a page), each other a query of its own. Null when the variant is not
 * visible to the caller or was removed (its revisions stay readable by their ids, as environment histories show them).
 */
export async function listVariantRevisions(db: CallerDb, variantId: string): Promise<PagedList<VariantRevision> | null> {
  const page = (after: number, last: number | null) =>
    db.statement(VARIANT_REVISIONS, {
      variant_id: variantId,
      revision: null,
      after,
      last,
      page_rows: VARIANT_REVISIONS_PAGE_ROWS,
    });
  const { variant, revisions } = await db.batch({
    variant: db.statement(LIVE_VARIANT, { variant_id: variantId }),
    revisions: page(0, null),
  });
  const found = variant.results[0];
  if (!found) return null;
  const last = found.lastRevision ?? 0;
  return {
    first: revisions.results.map(withParams),
    endsWith: (row) => row.revision >= last,
    after: async (row) => (await db.batch({ revisions: page(row.revision, last) })).revisions.results.map(withParams),
  };
}

/** Revision :revision of variant :variant_id; "variant_not_found" when the variant is not visible or was removed. */
export async function getVariantRevision(
  db: CallerDb,
  variantId: string,
  revision: number,
): Promise<VariantRevision | null | "variant_not_found"> {
  const { variant, revisions } = await db.batch({
    variant: db.statement(LIVE_VARIANT, { variant_id: variantId }),
    revisions: db.statement(VARIANT_REVISIONS, { variant_id: variantId, revision, after: 0, last: null, page_rows: 1 }),
  });
  if (variant.results.length === 0) return "variant_not_found";
  return revisions.results.map(withParams)[0] ?? null;
}

/** What a removal did: removed, nothing the caller can see, read-only access, or where the variant still runs. */
export type RemoveOutcome = "done" | "not_found" | "forbidden" | { deployedTo: string[] };

const REMOVAL_FACTS = sql<{ role: Role; deployedTo: string }>(
  `WITH ${CALLER_CTE}, ${APP_OF_VARIANT_CTE}
   SELECT app.role, (SELECT json_group_array(name) FROM (SELECT name FROM environments WHERE deployed_app_variant_id = :variant_id
                                                         ORDER BY rowid)) AS deployedTo
     FROM app JOIN app_variants v ON v.id = :variant_id AND v.removed_at IS NULL`,
);
/** Whether the caller may remove variant :variant_id now (after CALLER_CTE and APP_OF_VARIANT_CTE): REMOVE_VARIANT's rule. */
const REMOVABLE = `v.id = :variant_id AND v.removed_at IS NULL AND (SELECT role FROM app) IN ${WRITER_ROLES_SQL}
      AND NOT EXISTS (SELECT 1 FROM environments WHERE deployed_app_variant_id = :variant_id)`;

// Before the removal, which it is conditioned like: afterwards the variant no longer has its name.
const CONFIG_REMOVED = sql(
  `WITH ${CALLER_CTE}, ${APP_OF_VARIANT_CTE} ${INSERT_EVENT}
   SELECT :event_id, 'config.removed', w.organization_id, w.id, p.id, a.id, ${EVENT_ACTOR}, json_object(${VARIANT_DATA})
     FROM app_variants v JOIN apps a ON a.id = v.app_id ${APP_PLACE}
    WHERE ${REMOVABLE} ${EVENT_HANDOFF}`,
);

const REMOVE_VARIANT = sql(
  `WITH ${CALLER_CTE}, ${APP_OF_VARIANT_CTE}
   UPDATE app_variants AS v SET removed_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), removed_name = name, name = char(1) || id
    WHERE ${REMOVABLE}
   RETURNING id`,
);

/**
 * Removes variant :variant_id in one batch, unless an environment runs one of its revisions now: it leaves lists
 * and lookups by name and id, and frees its name (migrations/0005), while its revisions stay for the histories
 * that show them. Its event, `config.removed`, is in the batch.
 */
export async function removeVariant(db: CallerWriteDb, variantId: string): Promise<RemoveOutcome> {
  const values = { variant_id: variantId };
  const { facts, removed } = await db.batch({
    facts: db.statement(REMOVAL_FACTS, values),
    event: db.statement(CONFIG_REMOVED, { ...values, event_id: newId(db.bucket) }),
    removed: db.statement(REMOVE_VARIANT, values),
  });
  if (removed.results.length > 0) return "done";
  const found = facts.results[0];
  const deployedTo = found ? (JSON.parse(found.deployedTo) as string[]) : [];
  return deployedTo.length > 0 && refusal(facts) !== "forbidden" ? { deployedTo } : refusal(facts);
}

// The removal's own facts, with what it would remove.
const REMOVAL_PREVIEW = sql<{ role: Role; deployedTo: string; appId: string; name: string; revisions: number }>(
  `WITH ${CALLER_CTE}, ${APP_OF_VARIANT_CTE}
   SELECT app.role, (SELECT json_group_array(name) FROM (SELECT name FROM environments WHERE deployed_app_variant_id = :variant_id
                                                         ORDER BY rowid)) AS deployedTo,
          v.app_id AS appId, v.name, (SELECT COUNT(*) FROM app_variant_revisions WHERE variant_id = v.id) AS revisions
     FROM app JOIN app_variants v ON v.id = :variant_id AND v.removed_at IS NULL`,
);

/** `removeVariant`'s dry-run: its facts judged as it judges them, with what it would remove; one read, nothing written. */
export async function previewVariantRemoval(
  db: CallerWriteDb,
  variantId: string,
): Promise<{ outcome: "preview"; appId: string; name: string; revisions: number } | Exclude<RemoveOutcome, "done">> {
  const { facts } = await db.batch({ facts: db.statement(REMOVAL_PREVIEW, { variant_id: variantId }) });
  const found = facts.results[0];
  if (!found || !WRITER_ROLES.includes(found.role)) return refusal(facts);
  const deployedTo = JSON.parse(found.deployedTo) as string[];
  if (deployedTo.length > 0) return { deployedTo };
  return { outcome: "preview", appId: found.appId, name: found.name, revisions: found.revisions };
}
