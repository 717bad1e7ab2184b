import { v7 as uuidv7 } from "uuid";
import type { Role } from "./accounts";

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
const MEMBERSHIP = `LEFT JOIN organization_members m ON m.organization_id = w.organization_id AND m.user_id = ?1`;

// A workspace stands for its default project; an organization for its default workspace's default project.
const LINEAGE_SQL: Record<TargetKind, string> = {
  project: `${LINEAGE_SELECT} FROM projects p JOIN workspaces w ON w.id = p.workspace_id ${MEMBERSHIP} WHERE p.id = ?2`,
  workspace: `${LINEAGE_SELECT} FROM workspaces w
    LEFT JOIN projects p ON p.workspace_id = w.id AND p.is_default = 1 ${MEMBERSHIP} WHERE w.id = ?2`,
  organization: `${LINEAGE_SELECT} FROM organizations o
    JOIN workspaces w ON w.organization_id = o.id AND w.is_default = 1
    LEFT JOIN projects p ON p.workspace_id = w.id AND p.is_default = 1 ${MEMBERSHIP} WHERE o.id = ?2`,
};

/** The lineage of each named target as seen by `userId` (null where the id does not exist), in one round trip. */
export async function findProjectLineages(
  db: D1Database,
  userId: string,
  targets: { kind: TargetKind; id: string }[],
): Promise<(ProjectLineage | null)[]> {
  const results = await db.batch<ProjectLineage>(
    targets.map(({ kind, id }) => db.prepare(LINEAGE_SQL[kind]).bind(userId, id)),
  );
  return results.map((result) => result.results[0] ?? null);
}

export interface NewApp {
  projectId: string;
  name: string;
  createdBy: string;
}

/**
 * Creates the app and its environments in one batch (one transaction), so an app never exists without them.
 * A name already taken in the project fails with D1's UNIQUE constraint error on `apps`.
 */
export async function createApp(db: D1Database, app: NewApp, appId: string = uuidv7()): Promise<{ app_id: string; app_name: string }> {
  await db.batch([
    db.prepare("INSERT INTO apps (id, project_id, name, created_by) VALUES (?, ?, ?, ?)").bind(appId, app.projectId, app.name, app.createdBy),
    ...DEFAULT_ENVIRONMENTS.map((name) =>
      db.prepare("INSERT INTO environments (id, app_id, name) VALUES (?, ?, ?)").bind(uuidv7(), appId, name),
    ),
  ]);
  return { app_id: appId, app_name: app.name };
}

/** The record of SPEC 2.3, field for field. */
export interface EnvironmentRevisions {
  name: string;
  app_id: string;
  project_id: string;
  deployed_app_variant_id: string | null;
  deployed_variant_name: string | null;
  deployed_app_variant_revision_id: string | null;
  revision: number | null;
  revisions: RevisionEntry[];
  organization_id: string | null;
  workspace_id: string | null;
}

export interface RevisionEntry {
  id: string;
  revision: number;
  modified_by: string;
  deployed_app_variant_revision: string | null;
  deployment: string | null;
  created_at: string;
}

/**
 * One environment of one app with its revisions oldest first, or null when the environment does not exist or
 * the user is not a member of the app's organization (the two are not told apart).
 */
export async function listEnvironmentRevisions(
  db: D1Database,
  userId: string,
  appId: string,
  environmentName: string,
): Promise<EnvironmentRevisions | null> {
  const [environment, revisions] = await db.batch([
    db
      .prepare(
        `SELECT e.name, a.id AS app_id, a.project_id, e.deployed_app_variant_id, v.name AS deployed_variant_name,
                e.deployed_app_variant_revision_id, e.revision, w.organization_id, w.id AS workspace_id
           FROM environments e
           JOIN apps a ON a.id = e.app_id
           JOIN projects p ON p.id = a.project_id
           JOIN workspaces w ON w.id = p.workspace_id
           JOIN organization_members m ON m.organization_id = w.organization_id AND m.user_id = ?
           LEFT JOIN app_variants v ON v.id = e.deployed_app_variant_id
          WHERE e.app_id = ? AND e.name = ?`,
      )
      .bind(userId, appId, environmentName),
    db
      .prepare(
        `SELECT r.id, r.revision, u.username AS modified_by,
                r.deployed_app_variant_revision_id AS deployed_app_variant_revision,
                r.deployment_id AS deployment, r.created_at
           FROM environments e
           JOIN environment_revisions r ON r.environment_id = e.id
           JOIN users u ON u.id = r.modified_by
          WHERE e.app_id = ? AND e.name = ?
          ORDER BY r.revision`,
      )
      .bind(appId, environmentName),
  ]);
  const record = environment.results[0] as Omit<EnvironmentRevisions, "revisions"> | undefined;
  if (!record) return null;
  return {
    name: record.name,
    app_id: record.app_id,
    project_id: record.project_id,
    deployed_app_variant_id: record.deployed_app_variant_id,
    deployed_variant_name: record.deployed_variant_name,
    deployed_app_variant_revision_id: record.deployed_app_variant_revision_id,
    revision: record.revision,
    revisions: revisions.results as unknown as RevisionEntry[],
    organization_id: record.organization_id,
    workspace_id: record.workspace_id,
  };
}

/**
 * What `deployVariant` needs to hold before it runs: null when the app does not exist; otherwise whether it has
 * that environment, and the user's role in the app's organization (null: not a member).
 */
export function findDeploymentTarget(
  db: D1Database,
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
export async function deployVariant(db: D1Database, deployment: Deployment): Promise<{ environment: string; revision: number; revision_id: string }> {
  const { appId, environmentName, variantName, deployedBy } = deployment;
  const [variantRevisionId, deploymentId, environmentRevisionId] = [uuidv7(), uuidv7(), uuidv7()];
  const environmentId = "(SELECT id FROM environments WHERE app_id = ?1 AND name = ?2)";
  const variantId = "(SELECT id FROM app_variants WHERE app_id = ?1 AND name = ?3)";
  const results = await db.batch([
    db.prepare("INSERT INTO app_variants (id, app_id, name) VALUES (?4, ?1, ?3) ON CONFLICT (app_id, name) DO NOTHING")
      .bind(appId, environmentName, variantName, uuidv7()),
    db.prepare(
      `INSERT INTO app_variant_revisions (id, variant_id, revision, modified_by)
       SELECT ?4, ${variantId}, COALESCE(MAX(revision), 0) + 1, ?5 FROM app_variant_revisions WHERE variant_id = ${variantId}`,
    ).bind(appId, environmentName, variantName, variantRevisionId, deployedBy),
    db.prepare(
      `INSERT INTO deployments (id, environment_id, app_variant_revision_id, deployed_by) VALUES (?4, ${environmentId}, ?5, ?6)`,
    ).bind(appId, environmentName, variantName, deploymentId, variantRevisionId, deployedBy),
    db.prepare(
      `INSERT INTO environment_revisions (id, environment_id, revision, modified_by, deployed_app_variant_revision_id, deployment_id)
       SELECT ?4, id, revision + 1, ?5, ?6, ?7 FROM environments WHERE app_id = ?1 AND name = ?2`,
    ).bind(appId, environmentName, variantName, environmentRevisionId, deployedBy, variantRevisionId, deploymentId),
    db.prepare(
      `UPDATE environments SET revision = revision + 1, deployed_app_variant_id = ${variantId}, deployed_app_variant_revision_id = ?4
        WHERE app_id = ?1 AND name = ?2`,
    ).bind(appId, environmentName, variantName, variantRevisionId),
    db.prepare("SELECT revision FROM environment_revisions WHERE id = ?").bind(environmentRevisionId),
  ]);
  const revision = (results.at(-1)?.results[0] as { revision: number } | undefined)?.revision;
  if (revision === undefined) throw new Error("deployment was not recorded");
  return { environment: environmentName, revision, revision_id: environmentRevisionId };
}
