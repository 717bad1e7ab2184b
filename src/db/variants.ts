import { APP_BY_ID_CTE, APP_OF_VARIANT_CTE, batchAsCaller, CALLER_CTE, type Caller, refusal } from "./caller";
import type { Queryable } from "./d1";
import { parseJsonExactly } from "./exact-json";
import { WRITER_ROLES_SQL } from "./roles";

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

/** The variants of app ?3, oldest first; null when the app is not visible to the caller. */
export async function listAppVariants(db: Queryable, caller: Caller, appId: string): Promise<Variant[] | null> {
  const [app, variants] = await batchAsCaller<Row<Variant>>(db, caller, [
    db.prepare(`WITH ${CALLER_CTE}, ${APP_BY_ID_CTE} SELECT id FROM app`).bind(...caller.credentials, appId),
    db
      .prepare(`WITH ${CALLER_CTE}, ${APP_BY_ID_CTE} ${VARIANTS_OF_APP} ORDER BY v.created_at, v.id`)
      .bind(...caller.credentials, appId),
  ]);
  return app.results.length > 0 ? variants.results.map(withParams) : null;
}

/** The variant, when the caller can see its app. */
export async function getVariant(db: Queryable, caller: Caller, variantId: string): Promise<Variant | null> {
  const [variants] = await batchAsCaller<Row<Variant>>(db, caller, [
    db
      .prepare(`WITH ${CALLER_CTE}, ${APP_OF_VARIANT_CTE} ${VARIANTS_OF_APP} WHERE v.id = ?3`)
      .bind(...caller.credentials, variantId),
  ]);
  return variants.results.map(withParams)[0] ?? null;
}

/**
 * The variant deployed to environment ?4 of app ?3. `environmentFound` is false when the app is not visible or
 * has no such environment; `variant` is null also when nothing is deployed there.
 */
export async function getVariantDeployedTo(
  db: Queryable,
  caller: Caller,
  appId: string,
  environmentName: string,
): Promise<{ environmentFound: boolean; variant: Variant | null }> {
  const [environment, variants] = await batchAsCaller<Row<Variant>>(db, caller, [
    db
      .prepare(
        `WITH ${CALLER_CTE}, ${APP_BY_ID_CTE} SELECT e.id FROM app JOIN environments e ON e.app_id = app.id AND e.name = ?4`,
      )
      .bind(...caller.credentials, appId, environmentName),
    db
      .prepare(
        `WITH ${CALLER_CTE}, ${APP_BY_ID_CTE} ${VARIANTS_OF_APP}
          WHERE v.id = (SELECT deployed_app_variant_id FROM environments WHERE app_id = app.id AND name = ?4)`,
      )
      .bind(...caller.credentials, appId, environmentName),
  ]);
  return { environmentFound: environment.results.length > 0, variant: variants.results.map(withParams)[0] ?? null };
}

/**
 * The revisions of variant ?3 by number ascending, or only revision `revision`; null when the variant is not
 * visible to the caller or was removed (its revisions stay readable by their ids, as environment histories show them).
 */
export async function listVariantRevisions(
  db: Queryable,
  caller: Caller,
  variantId: string,
  revision: number | null = null,
): Promise<VariantRevision[] | null> {
  const [variant, revisions] = await batchAsCaller<Row<VariantRevision>>(db, caller, [
    db
      .prepare(
        `WITH ${CALLER_CTE}, ${APP_OF_VARIANT_CTE} SELECT v.id FROM app JOIN app_variants v ON v.app_id = app.id AND v.id = ?3 AND v.removed_at IS NULL`,
      )
      .bind(...caller.credentials, variantId),
    db
      .prepare(
        `WITH ${CALLER_CTE}, ${APP_OF_VARIANT_CTE}
         SELECT r.id, r.revision, v.name AS configName, r.params, u.username AS modifiedBy, r.created_at AS createdAt
           FROM app
           JOIN app_variants v ON v.app_id = app.id AND v.id = ?3 AND v.removed_at IS NULL
           JOIN app_variant_revisions r ON r.variant_id = v.id
           JOIN users u ON u.id = r.modified_by
          WHERE ?4 IS NULL OR r.revision = ?4
          ORDER BY r.revision`,
      )
      .bind(...caller.credentials, variantId, revision),
  ]);
  return variant.results.length > 0 ? revisions.results.map(withParams) : null;
}

/** What a removal did: removed, nothing the caller can see, read-only access, or where the variant still runs. */
export type RemoveOutcome = "done" | "not_found" | "forbidden" | { deployedTo: string[] };

/**
 * Removes variant ?3 in one batch, unless an environment runs one of its revisions now: it leaves lists and lookups
 * by name and id, and frees its name (migrations/0005), while its revisions stay for the histories that show them.
 */
export async function removeVariant(db: Queryable, caller: Caller, variantId: string): Promise<RemoveOutcome> {
  const bindings = [...caller.credentials, variantId];
  const [facts, removed] = await batchAsCaller(db, caller, [
    db
      .prepare(
        `WITH ${CALLER_CTE}, ${APP_OF_VARIANT_CTE}
         SELECT app.role, (SELECT json_group_array(name) FROM (SELECT name FROM environments WHERE deployed_app_variant_id = ?3
                                                               ORDER BY rowid)) AS deployedTo
           FROM app JOIN app_variants v ON v.id = ?3 AND v.removed_at IS NULL`,
      )
      .bind(...bindings),
    db
      .prepare(
        `WITH ${CALLER_CTE}, ${APP_OF_VARIANT_CTE}
         UPDATE app_variants SET removed_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), removed_name = name, name = char(1) || id
          WHERE id = ?3 AND removed_at IS NULL AND (SELECT role FROM app) IN ${WRITER_ROLES_SQL}
            AND NOT EXISTS (SELECT 1 FROM environments WHERE deployed_app_variant_id = ?3)
         RETURNING id`,
      )
      .bind(...bindings),
  ]);
  if (removed.results.length > 0) return "done";
  const found = facts.results[0] as { deployedTo: string } | undefined;
  const deployedTo = found ? (JSON.parse(found.deployedTo) as string[]) : [];
  return deployedTo.length > 0 && refusal(facts) !== "forbidden" ? { deployedTo } : refusal(facts);
}
