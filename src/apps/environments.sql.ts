import { SPLIT_STATE } from "../core/splits.sql.ts";
import { CALLER_CTE } from "../db/caller";
import type { CallerDb } from "../db/handles";
import type { PagedList } from "../db/paged-list";
import { sql } from "../db/sql";
import { APP_BY_ID_CTE } from "../db/visibility";

/** Every app is born with these environments, at revision 0 with nothing deployed. */
export const DEFAULT_ENVIRONMENTS = ["development", "staging", "production"] as const;

/** An environment of an app, with what is deployed there now and where the app lives. */
export interface Environment {
  id: string;
  name: string;
  appId: string;
  projectId: string;
  workspaceId: string;
  organizationId: string;
  deployedVariantId: string | null;
  /** The config name of the deployed variant. */
  deployedConfigName: string | null;
  deployedVariantRevisionId: string | null;
  /** Whether the deployed variant is archived: it keeps running here, but is not deployed again until unarchived. */
  deployedVariantArchived: number;
  /** The environment's own revision number: 0 before the first deployment. */
  revision: number;
  /** The state of the split running there (SPLIT_STATE), on the record's read; null: none. */
  split?: string | null;
}

/** One change of an environment. */
export interface EnvironmentRevision {
  id: string;
  revision: number;
  /** Username of who made the change. */
  modifiedBy: string;
  variantRevisionId: string | null;
  deploymentId: string | null;
  createdAt: string;
}

/** The environment :environment_name of app :app_id when the caller (see CALLER_CTE) is a member of the app's organization. */
const VISIBLE_ENVIRONMENT_CTE = `environment AS (
  SELECT e.id, e.name, e.app_id, a.project_id, e.deployed_app_variant_id, e.deployed_app_variant_revision_id,
         e.revision, w.organization_id, w.id AS workspace_id
    FROM environments e
    JOIN apps a ON a.id = e.app_id
    JOIN projects p ON p.id = a.project_id
    JOIN workspaces w ON w.id = p.workspace_id
    JOIN membership m ON m.organization_id = w.organization_id
   WHERE e.app_id = :app_id AND e.name = :environment_name)`;

const ENVIRONMENT = sql<Environment>(
  `WITH ${CALLER_CTE}, ${VISIBLE_ENVIRONMENT_CTE}
   SELECT environment.id, environment.name, environment.app_id AS appId, environment.project_id AS projectId,
          environment.workspace_id AS workspaceId, environment.organization_id AS organizationId,
          environment.deployed_app_variant_id AS deployedVariantId, v.name AS deployedConfigName,
          environment.deployed_app_variant_revision_id AS deployedVariantRevisionId,
          v.archived_at IS NOT NULL AS deployedVariantArchived, environment.revision,
          (SELECT ${SPLIT_STATE} FROM environment_splits s WHERE s.environment_id = environment.id) AS split
     FROM environment LEFT JOIN app_variants v ON v.id = environment.deployed_app_variant_id`,
);

/** Revisions of the environment after :after and up to :last (null: the latest), oldest first, at most :page_rows. */
const ENVIRONMENT_REVISIONS = sql<EnvironmentRevision>(
  `WITH ${CALLER_CTE}, ${VISIBLE_ENVIRONMENT_CTE}
   SELECT r.id, r.revision, u.username AS modifiedBy, r.deployed_app_variant_revision_id AS variantRevisionId,
          r.deployment_id AS deploymentId, r.created_at AS createdAt
     FROM environment
     JOIN environment_revisions r ON r.environment_id = environment.id
     JOIN users u ON u.id = r.modified_by
    WHERE r.revision > :after AND (:last IS NULL OR r.revision <= :last)
    ORDER BY r.revision
    LIMIT :page_rows`,
);

/** Revisions per page of an environment's history: about 250 bytes each in the answer, some 125 KB a page. */
export const ENVIRONMENT_REVISIONS_PAGE_ROWS = 500;

/**
 * One environment of one app and its history, oldest first, in pages (PagedList): the first beside the record, behind
 * the key check (one round trip for a history of up to a page), each other a query of its own, up to the revision the
 * record had then (its ETag's). Null when the environment does not exist or the caller is not a member of the app's
 * organization (the two are not told apart). Revisions come back as rows, not as one JSON string: D1 caps a string at
 * 2 MB, which a long history exceeds.
 */
export async function readEnvironmentRevisions(
  db: CallerDb,
  appId: string,
  environmentName: string,
): Promise<{ environment: Environment; revisions: PagedList<EnvironmentRevision> } | null> {
  const values = { app_id: appId, environment_name: environmentName, page_rows: ENVIRONMENT_REVISIONS_PAGE_ROWS };
  const { environment, revisions } = await db.batch({
    environment: db.statement(ENVIRONMENT, values),
    revisions: db.statement(ENVIRONMENT_REVISIONS, { ...values, after: 0, last: null }),
  });
  const found = environment.results[0];
  if (!found) return null;
  const page = (after: number) => db.statement(ENVIRONMENT_REVISIONS, { ...values, after, last: found.revision });
  return {
    environment: found,
    revisions: {
      first: revisions.results,
      endsWith: (row) => row.revision >= found.revision,
      after: async (row) => (await db.batch({ revisions: page(row.revision) })).revisions.results,
    },
  };
}

const ENVIRONMENTS = sql<Environment>(
  `WITH ${CALLER_CTE}, ${APP_BY_ID_CTE}
   SELECT e.id, e.name, e.app_id AS appId, app.project_id AS projectId, w.id AS workspaceId,
          w.organization_id AS organizationId, e.deployed_app_variant_id AS deployedVariantId,
          v.name AS deployedConfigName, e.deployed_app_variant_revision_id AS deployedVariantRevisionId,
          v.archived_at IS NOT NULL AS deployedVariantArchived, e.revision
     FROM app
     JOIN environments e ON e.app_id = app.id
     JOIN projects p ON p.id = app.project_id
     JOIN workspaces w ON w.id = p.workspace_id
     LEFT JOIN app_variants v ON v.id = e.deployed_app_variant_id
    ORDER BY e.rowid`,
);

/** The environments of app :app_id as the caller sees them, in the order they were made; empty when the app is not visible. */
export async function listEnvironments(db: CallerDb, appId: string): Promise<Environment[]> {
  const { environments } = await db.batch({ environments: db.statement(ENVIRONMENTS, { app_id: appId }) });
  return environments.results;
}
