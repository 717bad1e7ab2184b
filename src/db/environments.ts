import { v7 as uuidv7 } from "uuid";
import type { Role } from "./accounts";
import { batchAsCaller, CALLER_CTE, type Caller } from "./caller";
import type { Queryable } from "./d1";

/** Every app is born with these environments, at revision 0 with nothing deployed. */
export const DEFAULT_ENVIRONMENTS = ["development", "staging", "production"] as const;

/** An environment of an app, with what is deployed there now and where the app lives. */
export interface Environment {
  name: string;
  appId: string;
  projectId: string;
  workspaceId: string;
  organizationId: string;
  deployedVariantId: string | null;
  deployedVariantName: string | null;
  deployedVariantRevisionId: string | null;
  /** The environment's own revision number: 0 before the first deployment. */
  revision: number;
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

/** The environment ?4 of app ?3 when the caller (see CALLER_CTE) is a member of the app's organization. */
const VISIBLE_ENVIRONMENT_CTE = `environment AS (
  SELECT e.id, e.name, e.app_id, a.project_id, e.deployed_app_variant_id, e.deployed_app_variant_revision_id,
         e.revision, w.organization_id, w.id AS workspace_id
    FROM environments e
    JOIN apps a ON a.id = e.app_id
    JOIN projects p ON p.id = a.project_id
    JOIN workspaces w ON w.id = p.workspace_id
    JOIN organization_members m ON m.organization_id = w.organization_id AND m.user_id = (SELECT user_id FROM caller)
   WHERE e.app_id = ?3 AND e.name = ?4)`;

/**
 * One environment of one app and its whole history, oldest first, behind the key check: one round trip. Null
 * when the environment does not exist or the caller is not a member of the app's organization (the two are not
 * told apart). Revisions come back as rows, not as one JSON string: D1 caps a string at 2 MB, which a long
 * history exceeds.
 */
export async function readEnvironmentRevisions(
  db: Queryable,
  caller: Caller,
  appId: string,
  environmentName: string,
): Promise<{ environment: Environment; revisions: EnvironmentRevision[] } | null> {
  const key = [caller.prefix, caller.keyHash, appId, environmentName];
  const [environment, revisions] = await batchAsCaller<unknown>(db, caller, [
    db
      .prepare(
        `WITH ${CALLER_CTE}, ${VISIBLE_ENVIRONMENT_CTE}
         SELECT environment.name, environment.app_id AS appId, environment.project_id AS projectId,
                environment.workspace_id AS workspaceId, environment.organization_id AS organizationId,
                environment.deployed_app_variant_id AS deployedVariantId, v.name AS deployedVariantName,
                environment.deployed_app_variant_revision_id AS deployedVariantRevisionId, environment.revision
           FROM environment LEFT JOIN app_variants v ON v.id = environment.deployed_app_variant_id`,
      )
      .bind(...key),
    db
      .prepare(
        `WITH ${CALLER_CTE}, ${VISIBLE_ENVIRONMENT_CTE}
         SELECT r.id, r.revision, u.username AS modifiedBy, r.deployed_app_variant_revision_id AS variantRevisionId,
                r.deployment_id AS deploymentId, r.created_at AS createdAt
           FROM environment
           JOIN environment_revisions r ON r.environment_id = environment.id
           JOIN users u ON u.id = r.modified_by
          ORDER BY r.revision`,
      )
      .bind(...key),
  ]);
  const found = environment.results[0] as Environment | undefined;
  return found ? { environment: found, revisions: revisions.results as EnvironmentRevision[] } : null;
}

/**
 * What `deployVariant` needs to hold before it runs: null when the app does not exist; otherwise whether it has
 * that environment, and the user's role in the app's organization (null: not a member).
 */
export function findDeploymentTarget(
  db: Queryable,
  appId: string,
  environmentName: string,
  userId: string,
): Promise<{ hasEnvironment: number; role: Role | null } | null> {
  return db
    .prepare(
      `SELECT EXISTS (SELECT 1 FROM environments WHERE app_id = a.id AND name = ?2) AS hasEnvironment, m.role
         FROM apps a
         JOIN projects p ON p.id = a.project_id
         JOIN workspaces w ON w.id = p.workspace_id
         LEFT JOIN organization_members m ON m.organization_id = w.organization_id AND m.user_id = ?3
        WHERE a.id = ?1`,
    )
    .bind(appId, environmentName, userId)
    .first();
}

export interface Deployment {
  appId: string;
  environmentName: string;
  variantName: string;
  deployedBy: string;
}

// Sub-selects of deployVariant's statements (?1 app id, ?2 environment name, ?3 variant name).
const ENVIRONMENT_ID = "(SELECT id FROM environments WHERE app_id = ?1 AND name = ?2)";
const VARIANT_ID = "(SELECT id FROM app_variants WHERE app_id = ?1 AND name = ?3)";

/**
 * Deploys a new revision of the variant (creating the variant on first use) to the environment as its next
 * revision, in one batch; returns that environment revision's number and id. Revision numbers come from the rows themselves inside the transaction, and
 * UNIQUE (environment_id, revision) rejects any duplicate.
 */
export async function deployVariant(db: Queryable, deployment: Deployment): Promise<{ revision: number; revisionId: string }> {
  const { appId, environmentName, variantName, deployedBy } = deployment;
  const [variantRevisionId, deploymentId, environmentRevisionId] = [uuidv7(), uuidv7(), uuidv7()];
  const results = await db.batch([
    db
      .prepare("INSERT INTO app_variants (id, app_id, name) VALUES (?4, ?1, ?3) ON CONFLICT (app_id, name) DO NOTHING")
      .bind(appId, environmentName, variantName, uuidv7()),
    db
      .prepare(
        `INSERT INTO app_variant_revisions (id, variant_id, revision, modified_by)
       SELECT ?4, ${VARIANT_ID}, COALESCE(MAX(revision), 0) + 1, ?5 FROM app_variant_revisions WHERE variant_id = ${VARIANT_ID}`,
      )
      .bind(appId, environmentName, variantName, variantRevisionId, deployedBy),
    db
      .prepare(
        `INSERT INTO deployments (id, environment_id, app_variant_revision_id, deployed_by) VALUES (?4, ${ENVIRONMENT_ID}, ?5, ?6)`,
      )
      .bind(appId, environmentName, variantName, deploymentId, variantRevisionId, deployedBy),
    db
      .prepare(
        `INSERT INTO environment_revisions (id, environment_id, revision, modified_by, deployed_app_variant_revision_id, deployment_id)
       SELECT ?4, id, revision + 1, ?5, ?6, ?7 FROM environments WHERE app_id = ?1 AND name = ?2`,
      )
      .bind(appId, environmentName, variantName, environmentRevisionId, deployedBy, variantRevisionId, deploymentId),
    db
      .prepare(
        `UPDATE environments SET revision = revision + 1, deployed_app_variant_id = ${VARIANT_ID}, deployed_app_variant_revision_id = ?4
        WHERE app_id = ?1 AND name = ?2`,
      )
      .bind(appId, environmentName, variantName, variantRevisionId),
    db.prepare("SELECT revision FROM environment_revisions WHERE id = ?").bind(environmentRevisionId),
  ]);
  const revision = (results.at(-1)?.results[0] as { revision: number } | undefined)?.revision;
  if (revision === undefined) throw new Error("deployment was not recorded");
  return { revision, revisionId: environmentRevisionId };
}
