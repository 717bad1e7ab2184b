import { type Config, type ConfigRow, configStatement, refValues, toChosenConfig, toConfig } from "../core/configs.sql.ts";
import { CALLER_CTE } from "../db/caller";
import type { CallerDb } from "../db/handles";
import { sql } from "../db/sql";
import { APP_BY_REF_CTE, APP_OF_VARIANT_CTE } from "../db/visibility";
import { environmentIdOf } from "../simple/environment-id";
import type { RevisionLookup } from "./revisions.schemas";

/** The app the refs name, when the caller can see it (APP_BY_REF_CTE). */
const APP_FOUND = sql(`WITH ${CALLER_CTE}, ${APP_BY_REF_CTE} SELECT id FROM app`);

/**
 * The revision a retrieve names, as the caller may see it: one round trip, the legacy fetch's statement beside the key
 * check (a split's arm for the targeting key). None found: "no_app" for an app ref alone naming no app the caller can see (asked in the same batch), else
 * "none". By environment, an environment id given must be the one POST /simple/environments/query answers for that name.
 */
export async function retrieveRevision(
  db: CallerDb,
  lookup: RevisionLookup,
  targetingKey: string | null = null,
): Promise<Config | "none" | "no_app"> {
  const { config, app } = await db.batch({
    config: configStatement(db, lookup.refs),
    ...(lookup.by === "app" ? { app: db.statement(APP_FOUND, refValues(lookup.refs)) } : {}),
  });
  const found = toChosenConfig(config.results, targetingKey);
  if (!found) return app && app.results.length === 0 ? "no_app" : "none";
  if (lookup.by !== "environment" || lookup.environmentId === null) return found;
  return lookup.environmentId === environmentIdOf(found.projectId, lookup.refs.environment?.slug ?? "") ? found : "none";
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
