import { v7 as uuidv7 } from "uuid";
import { APP_BY_ID_CTE, batchAsCaller, CALLER_CTE, type Caller, type WriteOutcome, writeOutcome } from "./caller";
import type { Queryable } from "./d1";
import { DEFAULT_ENVIRONMENTS } from "./environments";
import { APP_PLACE, EVENT_ACTOR, EVENT_HANDOFF, INSERT_EVENT } from "./events";
import { batchClaimed, type IdempotencyClaim } from "./idempotency";
import { type Role, WRITER_ROLES_SQL } from "./roles";

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

/** Who created the app, whoever may see it (null: no such app): for operators. */
export function findAppCreator(db: Queryable, appId: string): Promise<{ id: string; email: string } | null> {
  return db.prepare("SELECT u.id, u.email FROM apps a JOIN users u ON u.id = a.created_by WHERE a.id = ?").bind(appId).first();
}

/** Where a request asks for an app to be created; every id optional. */
export interface AppTarget {
  projectId: string | null;
  workspaceId: string | null;
  organizationId: string | null;
}

/**
 * The project a new app goes to (?3 project id, ?4 workspace id, ?5 organization id, each possibly null): the
 * project, else the workspace's default project, else the organization's default workspace's default project,
 * else the caller's key's project; with its workspace and organization. A CTE named `target`, after CALLER_CTE.
 */
const TARGET_PROJECT_CTE = `target AS (
  SELECT p.id AS project_id, w.id AS workspace_id, w.organization_id
    FROM projects p JOIN workspaces w ON w.id = p.workspace_id
   WHERE p.id = CASE
     WHEN ?3 IS NOT NULL THEN ?3
     WHEN ?4 IS NOT NULL THEN (SELECT id FROM projects WHERE workspace_id = ?4 AND is_default = 1)
     WHEN ?5 IS NOT NULL THEN (SELECT dp.id FROM workspaces dw JOIN projects dp ON dp.workspace_id = dw.id AND dp.is_default = 1
                                WHERE dw.organization_id = ?5 AND dw.is_default = 1)
     ELSE (SELECT project_id FROM caller) END)`;

const targetBindings = (caller: Caller, target: AppTarget) =>
  [...caller.credentials, target.projectId, target.workspaceId, target.organizationId] as const;

/** What a create did: the app it made (or, replaying a retry, had made), or that the database refused it. */
export type CreateOutcome =
  | { outcome: "created"; appId: string; replayed: boolean }
  | { outcome: "refused" }
  | { outcome: "key_reused" };

/**
 * The whole of `POST /apps` in one round trip: in one batch, the key is checked, the target project resolved
 * (TARGET_PROJECT_CTE), every given id checked to agree with it, the caller's role checked, and the app and its
 * environments inserted, all by the database. "refused" when any check refused (nothing was written then:
 * `findCreateRefusal` tells why). A name taken in the project fails with D1's UNIQUE error on `apps`, which only
 * an authorised caller can reach. With a claim, a retry of a create that succeeded answers its app again.
 */
export async function createAppAsCaller(
  db: Queryable,
  caller: Caller,
  name: string,
  target: AppTarget,
  claim: IdempotencyClaim | null = null,
): Promise<CreateOutcome> {
  const appId = uuidv7();
  const batch = await batchClaimed(db, caller, claim, appId, [
    db
      .prepare(
        `WITH ${CALLER_CTE}, ${TARGET_PROJECT_CTE}
         INSERT INTO apps (id, project_id, name, created_by)
         SELECT ?6, target.project_id, ?7, caller.user_id
           FROM caller, target
          WHERE (?4 IS NULL OR target.workspace_id = ?4)
            AND (?5 IS NULL OR target.organization_id = ?5)
            AND EXISTS (SELECT 1 FROM membership m
                         WHERE m.organization_id = target.organization_id AND m.role IN ${WRITER_ROLES_SQL})
         RETURNING id`,
      )
      .bind(...targetBindings(caller, target), appId, name),
    ...environmentInserts(db, appId),
    // The app's id is new: it exists only if this batch made it.
    db
      .prepare(
        `WITH ${CALLER_CTE} ${INSERT_EVENT}
         SELECT ?3, 'app.created', w.organization_id, w.id, p.id, a.id, ${EVENT_ACTOR}, json_object('app_id', a.id, 'app_name', a.name)
           FROM apps a ${APP_PLACE} WHERE a.id = ?4 ${EVENT_HANDOFF}`,
      )
      .bind(...caller.credentials, uuidv7(), appId),
  ]);
  if ("reused" in batch) return { outcome: "key_reused" };
  if ("replayOf" in batch) return { outcome: "created", appId: batch.replayOf, replayed: true };
  return batch.ran[0].results.length > 0 ? { outcome: "created", appId, replayed: false } : { outcome: "refused" };
}

/** What the database says of a refused create's target, as the caller sees it. */
export interface CreateRefusal {
  /** Per given id: whether it exists in an organization the caller belongs to (true for an id not given). */
  visible: { project: boolean; workspace: boolean; organization: boolean };
  /** The resolved target project's workspace and organization, and the caller's role there; null if none. */
  target: { workspaceId: string; organizationId: string; role: Role | null } | null;
}

/** Whether the given project (?3), workspace (?4) or organization (?5) is in an organization the caller belongs to. */
const VISIBLE_PROJECT = `EXISTS (SELECT 1 FROM projects p JOIN workspaces w ON w.id = p.workspace_id
  JOIN membership m ON m.organization_id = w.organization_id WHERE p.id = ?3)`;
const VISIBLE_WORKSPACE = `EXISTS (SELECT 1 FROM workspaces w
  JOIN membership m ON m.organization_id = w.organization_id WHERE w.id = ?4)`;
const VISIBLE_ORGANIZATION = `EXISTS (SELECT 1 FROM membership m WHERE m.organization_id = ?5)`;

/**
 * Why a create was refused, in one more round trip (error paths only): the visibility of each given id and the
 * target with the caller's role in it, resolved by the same rule as the create.
 */
export async function findCreateRefusal(db: Queryable, caller: Caller, target: AppTarget): Promise<CreateRefusal> {
  const [refusal] = await batchAsCaller<{
    project: number;
    workspace: number;
    organization: number;
    workspaceId: string | null;
    organizationId: string | null;
    role: Role | null;
  }>(db, caller, [
    db
      .prepare(
        `WITH ${CALLER_CTE}, ${TARGET_PROJECT_CTE}
         SELECT ?3 IS NULL OR ${VISIBLE_PROJECT} AS project,
                ?4 IS NULL OR ${VISIBLE_WORKSPACE} AS workspace,
                ?5 IS NULL OR ${VISIBLE_ORGANIZATION} AS organization,
                target.workspace_id AS workspaceId, target.organization_id AS organizationId,
                (SELECT role FROM membership WHERE organization_id = target.organization_id) AS role
           FROM (SELECT 1) LEFT JOIN target`,
      )
      .bind(...targetBindings(caller, target)),
  ]);
  const row = refusal.results[0];
  return {
    visible: { project: Boolean(row.project), workspace: Boolean(row.workspace), organization: Boolean(row.organization) },
    target:
      row.workspaceId && row.organizationId
        ? { workspaceId: row.workspaceId, organizationId: row.organizationId, role: row.role }
        : null,
  };
}

/** An app as lists show it. */
export interface AppSummary {
  id: string;
  name: string;
  /** When the app was last renamed, else when it was created. */
  updatedAt: string;
}

/**
 * The apps of the caller's key's project, or of the default project of `workspaceId`, oldest first; only
 * `name` when given (exact). Empty when the caller is not a member of the project's organization.
 */
export async function listApps(
  db: Queryable,
  caller: Caller,
  filter: { name: string | null; workspaceId: string | null },
): Promise<AppSummary[]> {
  const [apps] = await batchAsCaller<AppSummary>(db, caller, [
    db
      .prepare(
        `WITH ${CALLER_CTE},
         project AS (
           SELECT p.id FROM projects p JOIN workspaces w ON w.id = p.workspace_id
             JOIN membership m ON m.organization_id = w.organization_id
            WHERE p.id = CASE WHEN ?4 IS NULL THEN (SELECT project_id FROM caller)
                              ELSE (SELECT id FROM projects WHERE workspace_id = ?4 AND is_default = 1) END)
         SELECT a.id, a.name, COALESCE(a.updated_at, a.created_at) AS updatedAt
           FROM apps a
          WHERE a.project_id = (SELECT id FROM project) AND (?3 IS NULL OR a.name = ?3)
          ORDER BY a.created_at, a.id`,
      )
      .bind(...caller.credentials, filter.name, filter.workspaceId),
  ]);
  return apps.results;
}

/**
 * Renames the app, behind the key check and the caller's role, in one round trip. A name taken in the project
 * fails with D1's UNIQUE error on `apps`, which only a caller allowed to rename can reach.
 */
export async function renameApp(db: Queryable, caller: Caller, appId: string, name: string): Promise<WriteOutcome> {
  const [role, , renamed] = await batchAsCaller(db, caller, [
    db.prepare(`WITH ${CALLER_CTE}, ${APP_BY_ID_CTE} SELECT role FROM app`).bind(...caller.credentials, appId),
    // Before the update, which it is conditioned like: the name it had. A rename refused by the database (a name
    // taken) fails the batch, this event with it.
    db
      .prepare(
        `WITH ${CALLER_CTE}, ${APP_BY_ID_CTE} ${INSERT_EVENT}
         SELECT ?5, 'app.renamed', w.organization_id, w.id, p.id, a.id, ${EVENT_ACTOR},
                json_object('app_id', a.id, 'app_name', ?4, 'previous_app_name', a.name)
           FROM app JOIN apps a ON a.id = app.id ${APP_PLACE}
          WHERE app.role IN ${WRITER_ROLES_SQL} AND a.name <> ?4 ${EVENT_HANDOFF}`,
      )
      .bind(...caller.credentials, appId, name, uuidv7()),
    db
      .prepare(
        `WITH ${CALLER_CTE}, ${APP_BY_ID_CTE}
         UPDATE apps SET name = ?4, updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
          WHERE id = (SELECT id FROM app WHERE role IN ${WRITER_ROLES_SQL}) RETURNING id`,
      )
      .bind(...caller.credentials, appId, name),
  ]);
  return writeOutcome(role, renamed);
}

/**
 * Deletes the app and everything under it (environments and their history, variants and their revisions,
 * deployments: the schema's ON DELETE CASCADE), in one statement, so in one transaction.
 */
export async function deleteApp(db: Queryable, caller: Caller, appId: string): Promise<WriteOutcome> {
  const [role, , deleted] = await batchAsCaller(db, caller, [
    db.prepare(`WITH ${CALLER_CTE}, ${APP_BY_ID_CTE} SELECT role FROM app`).bind(...caller.credentials, appId),
    // Before the delete, which it is conditioned like: afterwards there is no app to name.
    db
      .prepare(
        `WITH ${CALLER_CTE}, ${APP_BY_ID_CTE} ${INSERT_EVENT}
         SELECT ?4, 'app.deleted', w.organization_id, w.id, p.id, a.id, ${EVENT_ACTOR}, json_object('app_id', a.id, 'app_name', a.name)
           FROM app JOIN apps a ON a.id = app.id ${APP_PLACE} WHERE app.role IN ${WRITER_ROLES_SQL} ${EVENT_HANDOFF}`,
      )
      .bind(...caller.credentials, appId, uuidv7()),
    db
      .prepare(
        `WITH ${CALLER_CTE}, ${APP_BY_ID_CTE}
         DELETE FROM apps WHERE id = (SELECT id FROM app WHERE role IN ${WRITER_ROLES_SQL}) RETURNING id`,
      )
      .bind(...caller.credentials, appId),
  ]);
  return writeOutcome(role, deleted);
}

/** Whether app ?3 exists and the caller may see it: one round trip. */
export async function appIsVisible(db: Queryable, caller: Caller, appId: string): Promise<boolean> {
  const [app] = await batchAsCaller(db, caller, [
    db.prepare(`WITH ${CALLER_CTE}, ${APP_BY_ID_CTE} SELECT id FROM app`).bind(...caller.credentials, appId),
  ]);
  return app.results.length > 0;
}
