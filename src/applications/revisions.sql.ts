import { APP_OF_VARIANT_CTE, CALLER_CTE, type CallerDb } from "../db/caller";
import { sql } from "../db/sql";
import { environmentIdOf } from "../simple/environment-id";
import {
  CONFIG_COLUMNS,
  CONFIG_CTES,
  type Config,
  type ConfigRow,
  fetchConfig,
  refValues,
  toConfig,
} from "../variants/configs.sql.ts";
import type { RevisionLookup } from "./revisions.schemas";

/** What a retrieve found: a revision, nothing the caller can see, or an environment of the app that runs nothing. */
export type Retrieved = { outcome: "found"; config: Config } | { outcome: "none" } | { outcome: "runs_nothing" };

/**
 * What an app's environment runs (CONFIG_CTES in environment mode), in one statement with what tells its absences
 * apart: no row, no such app visible to the caller; no `foundEnvironmentId`, no such environment of the app; no
 * `revisionId`, that environment revision runs nothing.
 */
const ENVIRONMENT_CONFIG = sql<ConfigRow & { foundEnvironmentId: string | null }>(
  `WITH ${CALLER_CTE}, ${CONFIG_CTES}
   SELECT e.id AS foundEnvironmentId, ${CONFIG_COLUMNS}
     FROM app
     LEFT JOIN environments e ON e.app_id = app.id AND e.name = :environment_name
     LEFT JOIN variant_revision vr
     LEFT JOIN users vu ON vu.id = vr.modified_by
     LEFT JOIN environment_revision er
     LEFT JOIN users eu ON eu.id = er.modified_by`,
);

/**
 * The revision a retrieve names, as the caller may see it: one round trip, one statement beside the key check. By
 * variant, the legacy fetch's statement; by environment, ENVIRONMENT_CONFIG, which tells "no such app or environment"
 * (none) from "that environment revision runs nothing for the app" (runs_nothing). An environment id given must be
 * the one POST /simple/environments/query answers for that name.
 */
export async function retrieveRevision(db: CallerDb, lookup: RevisionLookup): Promise<Retrieved> {
  if (lookup.by === "variant") {
    const config = await fetchConfig(db, lookup.refs);
    return config ? { outcome: "found", config } : { outcome: "none" };
  }
  const { environment } = await db.batch({ environment: db.statement(ENVIRONMENT_CONFIG, refValues(lookup.refs)) });
  const found = environment.results[0];
  if (!found?.foundEnvironmentId) return { outcome: "none" };
  const name = lookup.refs.environment?.slug ?? "";
  if (lookup.environmentId !== null && lookup.environmentId !== environmentIdOf(found.projectId, name)) {
    return { outcome: "none" };
  }
  return found.revisionId ? { outcome: "found", config: toConfig(found) as Config } : { outcome: "runs_nothing" };
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
