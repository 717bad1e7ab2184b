import { CALLER_CTE } from "../db/caller";
import type { CallerDb } from "../db/handles";
import { sql } from "../db/sql";

/** An app's environment of the key's project, with what it runs (nulls: nothing) and its current revision. */
export interface ProjectEnvironmentRow {
  projectId: string;
  name: string;
  createdAt: string;
  appId: string;
  appName: string;
  appArchived: number;
  variantId: string | null;
  configName: string | null;
  revisionId: string | null;
  revisionSlug: string | null;
  revision: number | null;
  environmentRevision: number;
  deployedAt: string | null;
  deployedById: string | null;
  /** The project's environment of this name is protected (docs/CHANGE-REQUESTS.md §1). */
  guarded: number;
}

const PROJECT_ENVIRONMENTS = sql<ProjectEnvironmentRow>(
  `WITH ${CALLER_CTE}
   SELECT a.project_id AS projectId, e.name, e.created_at AS createdAt, a.id AS appId, a.name AS appName,
          a.archived_at IS NOT NULL AS appArchived, v.id AS variantId, COALESCE(v.removed_name, v.name) AS configName,
          r.id AS revisionId, r.slug AS revisionSlug, r.revision, e.revision AS environmentRevision,
          er.created_at AS deployedAt, er.modified_by AS deployedById, COALESCE(ep.protected, 0) AS guarded
     FROM apps a
     JOIN projects p ON p.id = a.project_id
     JOIN workspaces w ON w.id = p.workspace_id
     JOIN membership m ON m.organization_id = w.organization_id
     JOIN environments e ON e.app_id = a.id
     LEFT JOIN app_variant_revisions r ON r.id = e.deployed_app_variant_revision_id
     LEFT JOIN app_variants v ON v.id = r.variant_id
     LEFT JOIN environment_revisions er ON er.environment_id = e.id AND er.revision = e.revision
     LEFT JOIN environment_protections ep ON ep.project_id = a.project_id AND ep.environment = e.name
    WHERE a.project_id = (SELECT project_id FROM caller) AND (:name IS NULL OR e.name = :name)
    ORDER BY e.rowid`,
);

/** The statement of `listProjectEnvironments`, to end a batch with. */
export const projectEnvironmentsStatement = (db: CallerDb, name: string | null) => db.statement(PROJECT_ENVIRONMENTS, { name });

/** Every app's environments in the key's project (of name `name` only, when given), as the caller sees them: one round trip. */
export async function listProjectEnvironments(db: CallerDb, name: string | null): Promise<ProjectEnvironmentRow[]> {
  const { environments } = await db.batch({ environments: projectEnvironmentsStatement(db, name) });
  return environments.results;
}
