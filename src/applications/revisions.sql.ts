import { APP_BY_REF_CTE, APP_OF_VARIANT_CTE, CALLER_CTE, type CallerDb } from "../db/caller";
import { type Config, type ConfigRow, configStatement, fetchConfig, refValues, toConfig } from "../db/configs";
import { sql } from "../db/sql";
import { environmentIdOf } from "../simple/environment-id";
import type { RevisionLookup } from "./revisions.schemas";

/** What a retrieve found: a revision, nothing the caller can see, or an environment of the app that runs nothing. */
export type Retrieved = { outcome: "found"; config: Config } | { outcome: "none" } | { outcome: "runs_nothing" };

/** The app the refs name (APP_BY_REF_CTE) and its environment :environment_name, if it has one. */
const APP_ENVIRONMENT = sql<{ projectId: string; environmentId: string | null }>(
  `WITH ${CALLER_CTE}, ${APP_BY_REF_CTE}
   SELECT app.project_id AS projectId, e.id AS environmentId
     FROM app LEFT JOIN environments e ON e.app_id = app.id AND e.name = :environment_name`,
);

/**
 * The revision a retrieve names, as the caller may see it: one round trip. By variant, the legacy fetch's statement;
 * by environment, that statement beside the app's environment, which tells "no such app or environment" (none) from
 * "that environment revision runs nothing for the app" (runs_nothing). An environment id given must be the one
 * POST /simple/environments/query answers for that name.
 */
export async function retrieveRevision(db: CallerDb, lookup: RevisionLookup): Promise<Retrieved> {
  if (lookup.by === "variant") {
    const config = await fetchConfig(db, lookup.refs);
    return config ? { outcome: "found", config } : { outcome: "none" };
  }
  const { environment, config } = await db.batch({
    environment: db.statement(APP_ENVIRONMENT, refValues(lookup.refs)),
    config: configStatement(db, lookup.refs),
  });
  const facts = environment.results[0];
  const name = lookup.refs.environment?.slug ?? "";
  if (!facts?.environmentId) return { outcome: "none" };
  if (lookup.environmentId !== null && lookup.environmentId !== environmentIdOf(facts.projectId, name)) {
    return { outcome: "none" };
  }
  const found = toConfig(config.results[0]);
  return found ? { outcome: "found", config: found } : { outcome: "runs_nothing" };
}

/**
 * The revisions of variant :variant_id (of app :app_id when given), newest first, after the revision :next (a cursor:
 * none, from the latest; one not of this variant, nothing), at most :page_rows (-1: all). A removed variant has none
 * here, as in the legacy reads; an archived one keeps its history.
 */
const REVISIONS = sql<ConfigRow>(
  `WITH ${CALLER_CTE}, ${APP_OF_VARIANT_CTE}
   SELECT app.id AS appId, app.name AS appName, app.project_id AS projectId, v.id AS variantId,
          v.created_at AS variantCreatedAt, v.name AS configName, r.id AS revisionId, r.revision, r.slug AS revisionSlug,
          r.message, r.params, r.url, r.created_at AS revisionCreatedAt, r.modified_by AS revisionModifiedById,
          u.email AS revisionModifiedByEmail, NULL AS environmentName
     FROM app
     JOIN app_variants v ON v.id = :variant_id AND v.app_id = app.id AND v.removed_at IS NULL
     JOIN app_variant_revisions r ON r.variant_id = v.id
     JOIN users u ON u.id = r.modified_by
    WHERE (:app_id IS NULL OR app.id = :app_id)
      AND (:next IS NULL OR r.revision < (SELECT revision FROM app_variant_revisions WHERE id = :next AND variant_id = v.id))
    ORDER BY r.revision DESC
    LIMIT :page_rows`,
);

/** A page of a variant's revisions (newest first) and the cursor to the next, when more follow: one round trip. */
export async function logRevisions(
  db: CallerDb,
  variant: { appId: string | null; variantId: string },
  window: { limit: number | null; next: string | null },
): Promise<{ revisions: Config[]; next: string | null }> {
  const { revisions } = await db.batch({
    revisions: db.statement(REVISIONS, {
      variant_id: variant.variantId,
      app_id: variant.appId,
      next: window.next,
      page_rows: window.limit === null ? -1 : window.limit + 1,
    }),
  });
  const rows = revisions.results.map((row) => toConfig(row) as Config);
  if (window.limit === null || rows.length <= window.limit) return { revisions: rows, next: null };
  const page = rows.slice(0, window.limit);
  return { revisions: page, next: page[page.length - 1].revisionId };
}
