import { v7 as uuidv7 } from "uuid";
import type { EnvironmentRevisions, RevisionEntry } from "../apps/apps.schemas";
import { CALLER_CTE, type KeyCredentials, type Queryable, type Role, WRITER_ROLES } from "./accounts";

/** Every app is born with these environments, at revision 0 with nothing deployed. */
export const DEFAULT_ENVIRONMENTS = ["development", "staging", "production"] as const;

/** Where an app would live, and the caller's role in that organization (null: not a member). */
export interface ProjectLineage {
  projectId: string | null;
  workspaceId: string;
  organizationId: string;
  role: Role | null;
}

export type TargetKind = "project" | "workspace" | "organization";

const LINEAGE_SELECT = `SELECT p.id AS projectId, w.id AS workspaceId, w.organization_id AS organizationId, m.role AS role`;
const MEMBERSHIP = `LEFT JOIN organization_members m ON m.organization_id = w.organization_id AND m.user_id = (SELECT user_id FROM caller)`;

// A workspace stands for its default project; an organization for its default workspace's default project.
const LINEAGE_SQL: Record<TargetKind | "key", string> = {
  project: `${LINEAGE_SELECT} FROM projects p JOIN workspaces w ON w.id = p.workspace_id ${MEMBERSHIP} WHERE p.id = ?3`,
  workspace: `${LINEAGE_SELECT} FROM workspaces w
    LEFT JOIN projects p ON p.workspace_id = w.id AND p.is_default = 1 ${MEMBERSHIP} WHERE w.id = ?3`,
  organization: `${LINEAGE_SELECT} FROM organizations o
    JOIN workspaces w ON w.organization_id = o.id AND w.is_default = 1
    LEFT JOIN projects p ON p.workspace_id = w.id AND p.is_default = 1 ${MEMBERSHIP} WHERE o.id = ?3`,
  key: `${LINEAGE_SELECT} FROM projects p JOIN workspaces w ON w.id = p.workspace_id ${MEMBERSHIP}
    WHERE p.id = (SELECT project_id FROM caller) AND ?3 IS NULL`,
};

/**
 * In one round trip: whether the credentials name a live key, and the lineage of each target as seen by its
 * holder (null where the id does not exist). Kind "key" (with a null id) is the key's own project.
 */
export async function findProjectLineages(
  db: Queryable,
  credentials: KeyCredentials,
  targets: { kind: TargetKind | "key"; id: string | null }[],
): Promise<{ authenticated: boolean; lineages: (ProjectLineage | null)[] }> {
  const [caller, ...lineages] = await db.batch([
    db.prepare(`WITH ${CALLER_CTE} SELECT 1 FROM caller`).bind(credentials.prefix, credentials.keyHash),
    ...targets.map(({ kind, id }) =>
      db.prepare(`WITH ${CALLER_CTE} ${LINEAGE_SQL[kind]}`).bind(credentials.prefix, credentials.keyHash, id),
    ),
  ]);
  return {
    authenticated: caller.results.length > 0,
    lineages: lineages.map((result) => (result.results[0] as ProjectLineage | undefined) ?? null),
  };
}

export interface NewApp {
  projectId: string;
  name: string;
  createdBy: string;
}

const environmentInserts = (db: Queryable, appId: string) =>
  DEFAULT_ENVIRONMENTS.map((name) =>
    // Guarded so that, in a batch whose app insert was refused, nothing is written.
    db
      .prepare("INSERT INTO environments (id, app_id, name) SELECT ?2, ?1, ?3 WHERE EXISTS (SELECT 1 FROM apps WHERE id = ?1)")
      .bind(appId, uuidv7(), name),
  );

/**
 * Creates the app and its environments in one batch (one transaction), so an app never exists without them.
 * For operators and fixtures, who have already decided the project; requests go through `createAppAsCaller`.
 */
export async function createApp(db: Queryable, app: NewApp, appId: string = uuidv7()): Promise<void> {
  await db.batch([
    db
      .prepare("INSERT INTO apps (id, project_id, name, created_by) VALUES (?, ?, ?, ?)")
      .bind(appId, app.projectId, app.name, app.createdBy),
    ...environmentInserts(db, appId),
  ]);
}

export interface AppTarget {
  projectId?: string | null;
  workspaceId?: string | null;
  organizationId?: string | null;
}

/**
 * The whole of `POST /apps` in one round trip: in one batch, the key is checked, the target project resolved
 * (`projectId`, else the default project of `workspaceId`, else of `organizationId`, else the key's), every
 * given id checked to agree with it, the caller's role checked, and the app and its environments inserted, all
 * by the database. Returns the new app's id and its creator, or null when any check refused (nothing was
 * written then: `explainRefusedCreate` tells why). A name taken in the project fails with D1's UNIQUE error on
 * `apps`, which only an authorised caller can reach.
 */
export async function createAppAsCaller(
  db: Queryable,
  credentials: KeyCredentials,
  name: string,
  target: AppTarget,
  appId: string = uuidv7(),
): Promise<{ appId: string; createdBy: string } | null> {
  const [inserted] = await db.batch<{ created_by: string }>([
    db
      .prepare(
        `WITH ${CALLER_CTE},
         target AS (
           SELECT p.id AS project_id, w.id AS workspace_id, w.organization_id
             FROM projects p JOIN workspaces w ON w.id = p.workspace_id
            WHERE p.id = CASE
              WHEN ?4 IS NOT NULL THEN ?4
              WHEN ?5 IS NOT NULL THEN (SELECT id FROM projects WHERE workspace_id = ?5 AND is_default = 1)
              WHEN ?6 IS NOT NULL THEN (SELECT dp.id FROM workspaces dw JOIN projects dp ON dp.workspace_id = dw.id AND dp.is_default = 1
                                         WHERE dw.organization_id = ?6 AND dw.is_default = 1)
              ELSE (SELECT project_id FROM caller) END)
         INSERT INTO apps (id, project_id, name, created_by)
         SELECT ?3, target.project_id, ?7, caller.user_id
           FROM caller, target
          WHERE (?5 IS NULL OR target.workspace_id = ?5)
            AND (?6 IS NULL OR target.organization_id = ?6)
            AND EXISTS (SELECT 1 FROM organization_members m
                         WHERE m.organization_id = target.organization_id AND m.user_id = caller.user_id
                           AND m.role IN (${WRITER_ROLES.map((role) => `'${role}'`).join(", ")}))
         RETURNING created_by`,
      )
      .bind(
        credentials.prefix,
        credentials.keyHash,
        appId,
        target.projectId ?? null,
        target.workspaceId ?? null,
        target.organizationId ?? null,
        name,
      ),
    ...environmentInserts(db, appId),
  ]);
  const createdBy = inserted.results[0]?.created_by;
  return createdBy ? { appId, createdBy } : null;
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
 * The record of SPEC 2.3 for one environment of one app, revisions oldest first, with the key check in the same
 * batch: one round trip. `userId` is null when the key is not live; `record` is null when the environment does
 * not exist or the caller is not a member of the app's organization (the two are not told apart). Revisions
 * come back as rows, not as one JSON string: D1 caps a string at 2 MB, which a long history exceeds.
 */
export async function readEnvironmentRevisions(
  db: Queryable,
  credentials: KeyCredentials,
  appId: string,
  environmentName: string,
): Promise<{ userId: string | null; record: EnvironmentRevisions | null }> {
  const parameters = [credentials.prefix, credentials.keyHash, appId, environmentName];
  const [environment, revisions] = await db.batch([
    db
      .prepare(
        `WITH ${CALLER_CTE}, ${VISIBLE_ENVIRONMENT_CTE}
         SELECT (SELECT user_id FROM caller) AS userId, environment.name, environment.app_id, environment.project_id,
                environment.deployed_app_variant_id, v.name AS deployed_variant_name,
                environment.deployed_app_variant_revision_id, environment.revision,
                environment.organization_id, environment.workspace_id
           FROM (SELECT 1) LEFT JOIN environment LEFT JOIN app_variants v ON v.id = environment.deployed_app_variant_id`,
      )
      .bind(...parameters),
    db
      .prepare(
        `WITH ${CALLER_CTE}, ${VISIBLE_ENVIRONMENT_CTE}
         SELECT r.id, r.revision, u.username AS modified_by,
                r.deployed_app_variant_revision_id AS deployed_app_variant_revision,
                r.deployment_id AS deployment, r.created_at
           FROM environment
           JOIN environment_revisions r ON r.environment_id = environment.id
           JOIN users u ON u.id = r.modified_by
          ORDER BY r.revision`,
      )
      .bind(...parameters),
  ]);
  const row = environment.results[0] as (Omit<EnvironmentRevisions, "revisions"> & { userId: string | null }) | undefined;
  if (!row?.userId || row.name === null) return { userId: row?.userId ?? null, record: null };
  return {
    userId: row.userId,
    record: {
      name: row.name,
      app_id: row.app_id,
      project_id: row.project_id,
      deployed_app_variant_id: row.deployed_app_variant_id,
      deployed_variant_name: row.deployed_variant_name,
      deployed_app_variant_revision_id: row.deployed_app_variant_revision_id,
      revision: row.revision,
      revisions: revisions.results as RevisionEntry[],
      organization_id: row.organization_id,
      workspace_id: row.workspace_id,
    },
  };
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

/**
 * Deploys a new revision of the variant (creating the variant on first use) to the environment as its next
 * revision, in one batch. Revision numbers come from the rows themselves inside the transaction, and
 * UNIQUE (environment_id, revision) rejects any duplicate.
 */
export async function deployVariant(
  db: Queryable,
  deployment: Deployment,
): Promise<{ environment: string; revision: number; revision_id: string }> {
  const { appId, environmentName, variantName, deployedBy } = deployment;
  const [variantRevisionId, deploymentId, environmentRevisionId] = [uuidv7(), uuidv7(), uuidv7()];
  const environmentId = "(SELECT id FROM environments WHERE app_id = ?1 AND name = ?2)";
  const variantId = "(SELECT id FROM app_variants WHERE app_id = ?1 AND name = ?3)";
  const results = await db.batch([
    db
      .prepare("INSERT INTO app_variants (id, app_id, name) VALUES (?4, ?1, ?3) ON CONFLICT (app_id, name) DO NOTHING")
      .bind(appId, environmentName, variantName, uuidv7()),
    db
      .prepare(
        `INSERT INTO app_variant_revisions (id, variant_id, revision, modified_by)
       SELECT ?4, ${variantId}, COALESCE(MAX(revision), 0) + 1, ?5 FROM app_variant_revisions WHERE variant_id = ${variantId}`,
      )
      .bind(appId, environmentName, variantName, variantRevisionId, deployedBy),
    db
      .prepare(
        `INSERT INTO deployments (id, environment_id, app_variant_revision_id, deployed_by) VALUES (?4, ${environmentId}, ?5, ?6)`,
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
        `UPDATE environments SET revision = revision + 1, deployed_app_variant_id = ${variantId}, deployed_app_variant_revision_id = ?4
        WHERE app_id = ?1 AND name = ?2`,
      )
      .bind(appId, environmentName, variantName, variantRevisionId),
    db.prepare("SELECT revision FROM environment_revisions WHERE id = ?").bind(environmentRevisionId),
  ]);
  const revision = (results.at(-1)?.results[0] as { revision: number } | undefined)?.revision;
  if (revision === undefined) throw new Error("deployment was not recorded");
  return { environment: environmentName, revision, revision_id: environmentRevisionId };
}
