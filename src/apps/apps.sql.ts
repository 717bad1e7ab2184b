import {
  APP_GATE_CTES,
  type GatedOutcome,
  type GateFacts,
  gatedOutcome,
  gateStatements,
  INSERT_BYPASS_EVENTS,
  MAY_WRITE_APP,
  SELECT_GATE_FACTS,
} from "../core/app-protection.sql.ts";
import { APP_PLACE } from "../core/change-events.sql.ts";
import { type BucketRef, newId } from "../db/buckets";
import { CALLER_CTE } from "../db/caller";
import type { Queryable } from "../db/d1";
import { EVENT_ACTOR, EVENT_HANDOFF, INSERT_EVENT } from "../db/event-writes";
import type { CallerDb, CallerWriteDb } from "../db/handles";
import { batchClaimed, type IdempotencyClaim } from "../db/idempotency";
import { type Role, WRITER_ROLES, WRITER_ROLES_SQL } from "../db/roles";
import { batch, type Sql, type Statement, sql, type Values } from "../db/sql";
import { APP_BY_ID_CTE } from "../db/visibility";
import { DEFAULT_ENVIRONMENTS } from "./environments.sql.ts";

export interface NewApp {
  projectId: string;
  name: string;
  createdBy: string;
}

// Guarded so that, in a batch whose app insert was refused, nothing is written.
const INSERT_ENVIRONMENT = /* @__PURE__ */ sql(
  "INSERT INTO environments (id, app_id, name) SELECT :environment_id, :app_id, :name WHERE EXISTS (SELECT 1 FROM apps WHERE id = :app_id)",
);

/**
 * The inserts of the app's DEFAULT_ENVIRONMENTS (their ids in the app's `bucket`), named `environment_<name>`, bound by
 * `bind` (a caller's handle, or not).
 */
function environmentInserts(
  appId: string,
  bucket: number,
  bind: (query: Sql, values: Values) => Statement,
): Record<string, Statement> {
  const inserts: Record<string, Statement> = {};
  for (const name of DEFAULT_ENVIRONMENTS) {
    inserts[`environment_${name}`] = bind(INSERT_ENVIRONMENT, { environment_id: newId(bucket), app_id: appId, name });
  }
  return inserts;
}

const INSERT_APP = /* @__PURE__ */ sql(
  "INSERT INTO apps (id, project_id, name, created_by) VALUES (:app_id, :project_id, :name, :created_by)",
);

/**
 * Creates the app and its environments in one batch (one transaction), so an app never exists without them.
 * For operators and fixtures, who have already decided the project (and know its organization's `bucket`); requests
 * go through `createAppAsCaller`.
 */
export async function createApp(db: Queryable, app: NewApp, bucket: number, appId = newId(bucket)): Promise<void> {
  await batch(db, {
    app: INSERT_APP.bind(db, { app_id: appId, project_id: app.projectId, name: app.name, created_by: app.createdBy }),
    ...environmentInserts(appId, bucket, (query, values) => query.bind(db, values)),
  });
}

/** Who created the app, whoever may see it (null: no such app): for operators. */
export function findAppCreator(db: Queryable, appId: string): Promise<{ id: string; email: string } | null> {
  return APP_CREATOR.bind(db, { app_id: appId }).first();
}

const APP_CREATOR = /* @__PURE__ */ sql(
  "SELECT u.id, u.email FROM apps a JOIN users u ON u.id = a.created_by WHERE a.id = :app_id",
);

/** Where a request asks for an app to be created; every id optional. */
export interface AppTarget {
  projectId: string | null;
  workspaceId: string | null;
  organizationId: string | null;
}

/**
 * The project a new app goes to (:project_id, :workspace_id, :organization_id, each possibly null: `targetValues`): the
 * project, else the workspace's default project, else the organization's default workspace's default project,
 * else the caller's key's project; with its workspace and organization. A CTE named `target`, after CALLER_CTE.
 */
const TARGET_PROJECT_CTE = `target AS (
  SELECT p.id AS project_id, w.id AS workspace_id, w.organization_id
    FROM projects p JOIN workspaces w ON w.id = p.workspace_id
   WHERE p.id = CASE
     WHEN :project_id IS NOT NULL THEN :project_id
     WHEN :workspace_id IS NOT NULL THEN (SELECT id FROM projects WHERE workspace_id = :workspace_id AND is_default = 1)
     WHEN :organization_id IS NOT NULL THEN (SELECT dp.id FROM workspaces dw JOIN projects dp ON dp.workspace_id = dw.id AND dp.is_default = 1
                                WHERE dw.organization_id = :organization_id AND dw.is_default = 1)
     ELSE (SELECT project_id FROM caller) END)`;

/** What TARGET_PROJECT_CTE resolves the project by, in its order (the request's bucket; none given: the key's). */
export const targetOrder = (target: AppTarget): BucketRef[] => [target.projectId, target.workspaceId, target.organizationId];

const targetValues = (target: AppTarget) => ({
  project_id: target.projectId,
  workspace_id: target.workspaceId,
  organization_id: target.organizationId,
});

const CREATE_APP = /* @__PURE__ */ sql(
  `WITH ${CALLER_CTE}, ${TARGET_PROJECT_CTE}
   INSERT INTO apps (id, project_id, name, created_by)
   SELECT :app_id, target.project_id, :name, caller.user_id
     FROM caller, target
    WHERE (:workspace_id IS NULL OR target.workspace_id = :workspace_id)
      AND (:organization_id IS NULL OR target.organization_id = :organization_id)
      AND EXISTS (SELECT 1 FROM membership m
                   WHERE m.organization_id = target.organization_id AND m.role IN ${WRITER_ROLES_SQL})
   RETURNING id`,
);

// The app's id is new: it exists only if this batch made it.
const APP_CREATED = /* @__PURE__ */ sql(
  `WITH ${CALLER_CTE} ${INSERT_EVENT}
   SELECT :event_id, 'app.created', w.organization_id, w.id, p.id, a.id, ${EVENT_ACTOR}, json_object('app_id', a.id, 'app_name', a.name)
     FROM apps a ${APP_PLACE} WHERE a.id = :app_id ${EVENT_HANDOFF}`,
);

/**
 * The statements of a create as the caller (see `createAppAsCaller`): `app` (RETURNING its id when made), its
 * environments and its event.
 */
export const createAppStatements = (db: CallerWriteDb, appId: string, name: string, target: AppTarget) => ({
  app: db.statement(CREATE_APP, { ...targetValues(target), app_id: appId, name }),
  ...environmentInserts(appId, db.bucket, (query, values) => db.statement(query, values)),
  event: db.statement(APP_CREATED, { event_id: newId(db.bucket), app_id: appId }),
});

/** The key's project, as a create's target: no id given. */
export const KEY_PROJECT: AppTarget = { projectId: null, workspaceId: null, organizationId: null };

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
  db: CallerWriteDb,
  name: string,
  target: AppTarget,
  claim: IdempotencyClaim | null = null,
): Promise<CreateOutcome> {
  const appId = newId(db.bucket);
  const batch = await batchClaimed(db, claim, appId, createAppStatements(db, appId, name, target));
  if ("reused" in batch) return { outcome: "key_reused" };
  if ("replayOf" in batch) return { outcome: "created", appId: batch.replayOf, replayed: true };
  return batch.ran.app.results.length > 0 ? { outcome: "created", appId, replayed: false } : { outcome: "refused" };
}

/** What the database says of a refused create's target, as the caller sees it. */
export interface CreateRefusal {
  /** Per given id: whether it exists in an organization the caller belongs to (true for an id not given). */
  visible: { project: boolean; workspace: boolean; organization: boolean };
  /** The resolved target project's workspace and organization, and the caller's role there; null if none. */
  target: { workspaceId: string; organizationId: string; role: Role | null } | null;
}

/** Whether the given project, workspace or organization is in an organization the caller belongs to. */
const VISIBLE_PROJECT = `EXISTS (SELECT 1 FROM projects p JOIN workspaces w ON w.id = p.workspace_id
  JOIN membership m ON m.organization_id = w.organization_id WHERE p.id = :project_id)`;
const VISIBLE_WORKSPACE = `EXISTS (SELECT 1 FROM workspaces w
  JOIN membership m ON m.organization_id = w.organization_id WHERE w.id = :workspace_id)`;
const VISIBLE_ORGANIZATION = `EXISTS (SELECT 1 FROM membership m WHERE m.organization_id = :organization_id)`;

const CREATE_REFUSAL = /* @__PURE__ */ sql<{
  project: number;
  workspace: number;
  organization: number;
  workspaceId: string | null;
  organizationId: string | null;
  role: Role | null;
}>(
  `WITH ${CALLER_CTE}, ${TARGET_PROJECT_CTE}
   SELECT :project_id IS NULL OR ${VISIBLE_PROJECT} AS project,
          :workspace_id IS NULL OR ${VISIBLE_WORKSPACE} AS workspace,
          :organization_id IS NULL OR ${VISIBLE_ORGANIZATION} AS organization,
          target.workspace_id AS workspaceId, target.organization_id AS organizationId,
          (SELECT role FROM membership WHERE organization_id = target.organization_id) AS role
     FROM (SELECT 1) LEFT JOIN target`,
);

/**
 * Why a create was refused, in one more round trip (error paths only): the visibility of each given id and the
 * target with the caller's role in it, resolved by the same rule as the create.
 */
export async function findCreateRefusal(db: CallerDb, target: AppTarget): Promise<CreateRefusal> {
  const { refusal } = await db.batch({ refusal: db.statement(CREATE_REFUSAL, targetValues(target)) });
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
 * The apps of the caller's key's project, or of the default project of `workspaceId`, oldest first, archived ones
 * left out; only `name` when given (exact). Empty when the caller is not a member of the project's organization.
 */
export async function listApps(db: CallerDb, filter: { name: string | null; workspaceId: string | null }): Promise<AppSummary[]> {
  const { apps } = await db.batch({ apps: db.statement(APPS, { name: filter.name, workspace_id: filter.workspaceId }) });
  return apps.results;
}

const APPS = /* @__PURE__ */ sql<AppSummary>(
  `WITH ${CALLER_CTE},
   project AS (
     SELECT p.id FROM projects p JOIN workspaces w ON w.id = p.workspace_id
       JOIN membership m ON m.organization_id = w.organization_id
      WHERE p.id = CASE WHEN :workspace_id IS NULL THEN (SELECT project_id FROM caller)
                        ELSE (SELECT id FROM projects WHERE workspace_id = :workspace_id AND is_default = 1) END)
   SELECT a.id, a.name, COALESCE(a.updated_at, a.created_at) AS updatedAt
     FROM apps a
    WHERE a.project_id = (SELECT id FROM project) AND a.archived_at IS NULL AND (:name IS NULL OR a.name = :name)
    ORDER BY a.created_at, a.id`,
);

export const APP_ROLE = /* @__PURE__ */ sql(`WITH ${CALLER_CTE}, ${APP_BY_ID_CTE} SELECT role FROM app`);

/** A rename's gate (src/core/app-protection.sql.ts): it changes the app when the name differs. */
const RENAME_CTES = `${CALLER_CTE}, ${APP_BY_ID_CTE}, change AS (SELECT name <> :name AS changes FROM app), ${APP_GATE_CTES}`;
const RENAME_GATE = {
  facts: /* @__PURE__ */ sql<GateFacts>(`WITH ${RENAME_CTES} ${SELECT_GATE_FACTS}`),
  bypassed: /* @__PURE__ */ sql(`WITH ${RENAME_CTES} ${INSERT_BYPASS_EVENTS}`),
};

// Before the update, which it is conditioned like: the name it had. A rename refused by the database (a name
// taken) fails the batch, this event with it.
const APP_RENAMED = /* @__PURE__ */ sql(
  `WITH ${RENAME_CTES} ${INSERT_EVENT}
   SELECT :event_id, 'app.renamed', w.organization_id, w.id, p.id, a.id, ${EVENT_ACTOR},
          json_object('app_id', a.id, 'app_name', :name, 'previous_app_name', a.name)
     FROM app JOIN apps a ON a.id = app.id ${APP_PLACE}
    WHERE ${MAY_WRITE_APP} AND a.name <> :name ${EVENT_HANDOFF}`,
);

// A rename to the name the app has changes nothing: not even updated_at.
const RENAME_APP = /* @__PURE__ */ sql(
  `WITH ${RENAME_CTES}
   UPDATE apps SET name = :name, updated_at = CASE WHEN name = :name THEN updated_at ELSE strftime('%Y-%m-%dT%H:%M:%fZ', 'now') END
    WHERE id = (SELECT id FROM app) AND ${MAY_WRITE_APP} RETURNING id`,
);

/**
 * Renames the app, behind the key check, the caller's role and the app's protected environments (a new name changes
 * what each answers: src/core/app-protection.sql.ts), in one round trip. A name taken in the project fails with
 * D1's UNIQUE error on `apps`, which only a caller allowed to rename can reach.
 */
export async function renameApp(
  db: CallerWriteDb,
  appId: string,
  name: string,
  bypassReason: string | null,
): Promise<GatedOutcome> {
  const { facts, renamed } = await db.batch(renameStatements(db, appId, name, bypassReason));
  return gatedOutcome(facts, renamed, appId);
}

/**
 * The statements of `renameApp`: `facts` (read by `gatedOutcome`), the bypass's and the rename's events, and
 * `renamed` (RETURNING the id when the caller may rename).
 */
export const renameStatements = (db: CallerWriteDb, appId: string, name: string, bypassReason: string | null) => {
  const values = { app_id: appId, name, bypass_reason: bypassReason };
  return {
    ...gateStatements(db, RENAME_GATE, values),
    event: db.statement(APP_RENAMED, { ...values, event_id: newId(db.bucket) }),
    renamed: db.statement(RENAME_APP, values),
  };
};

/** A delete's gate: it always changes the app. */
const DELETE_CTES = `${CALLER_CTE}, ${APP_BY_ID_CTE}, change AS (SELECT 1 AS changes), ${APP_GATE_CTES}`;
const DELETE_GATE = {
  facts: /* @__PURE__ */ sql<GateFacts>(`WITH ${DELETE_CTES} ${SELECT_GATE_FACTS}`),
  bypassed: /* @__PURE__ */ sql(`WITH ${DELETE_CTES} ${INSERT_BYPASS_EVENTS}`),
};

// Before the delete, which it is conditioned like: afterwards there is no app to name.
const APP_DELETED = /* @__PURE__ */ sql(
  `WITH ${DELETE_CTES} ${INSERT_EVENT}
   SELECT :event_id, 'app.deleted', w.organization_id, w.id, p.id, a.id, ${EVENT_ACTOR}, json_object('app_id', a.id, 'app_name', a.name)
     FROM app JOIN apps a ON a.id = app.id ${APP_PLACE} WHERE ${MAY_WRITE_APP} ${EVENT_HANDOFF}`,
);

const DELETE_APP = /* @__PURE__ */ sql(
  `WITH ${DELETE_CTES} DELETE FROM apps WHERE id = (SELECT id FROM app) AND ${MAY_WRITE_APP} RETURNING id`,
);

/**
 * Deletes the app and everything under it (environments and their history, variants and their revisions,
 * deployments: the schema's ON DELETE CASCADE), in one statement, so in one transaction; refused while a protected
 * environment of it runs a config, unless bypassed (`bypassReason`, from a role in its `bypass_roles`).
 */
export async function deleteApp(db: CallerWriteDb, appId: string, bypassReason: string | null = null): Promise<GatedOutcome> {
  const values = { app_id: appId, bypass_reason: bypassReason };
  const { facts, deleted } = await db.batch({
    ...gateStatements(db, DELETE_GATE, values),
    event: db.statement(APP_DELETED, { ...values, event_id: newId(db.bucket) }),
    deleted: db.statement(DELETE_APP, values),
  });
  return gatedOutcome(facts, deleted, appId);
}

/** What a delete would stop serving: an environment of the app that runs a config. */
export interface RunningEnvironment {
  environment: string;
  environment_revision: number;
  config_name: string;
  revision: number;
  protected: boolean;
}

// The delete's own facts, with what it would remove: the app's name, its configs, what its environments run.
const DELETION_PREVIEW = /* @__PURE__ */ sql<
  GateFacts & {
    name: string;
    configs: number;
    running: string;
  }
>(
  `WITH ${DELETE_CTES}
   SELECT app.role, app_gate.refusal, app_gate.environment, a.name,
          (SELECT COUNT(*) FROM app_variants WHERE app_id = a.id AND removed_at IS NULL) AS configs,
          (SELECT json_group_array(json_object('environment', name, 'environment_revision', revision, 'config_name', config_name,
                                               'revision', config_revision, 'protected', json(guarded)))
             FROM (SELECT e.name, e.revision, COALESCE(v.removed_name, v.name) AS config_name, vr.revision AS config_revision,
                          CASE WHEN e.name IN (SELECT name FROM guarded) THEN 'true' ELSE 'false' END AS guarded
                     FROM environments e JOIN app_variant_revisions vr ON vr.id = e.deployed_app_variant_revision_id
                     JOIN app_variants v ON v.id = vr.variant_id
                    WHERE e.app_id = a.id ORDER BY e.name)) AS running
     FROM app JOIN apps a ON a.id = app.id, app_gate`,
);

/** What deleting the app would remove, or why the delete would do nothing (as `deleteApp` says): one read. */
export type DeletionPreview =
  | { outcome: "preview"; name: string; configs: number; running: RunningEnvironment[] }
  | Exclude<GatedOutcome, "done">;

/** `deleteApp`'s dry-run: its facts, read as it reads them, with what it would remove; nothing written. */
export async function previewAppDeletion(
  db: CallerWriteDb,
  appId: string,
  bypassReason: string | null,
): Promise<DeletionPreview> {
  const { facts } = await db.batch({ facts: db.statement(DELETION_PREVIEW, { app_id: appId, bypass_reason: bypassReason }) });
  const found = facts.results[0];
  if (!found) return "not_found";
  if (!WRITER_ROLES.includes(found.role)) return "forbidden";
  if (found.refusal && found.environment) return { refusal: found.refusal, appId, environment: found.environment };
  return {
    outcome: "preview",
    name: found.name,
    configs: found.configs,
    running: JSON.parse(found.running) as RunningEnvironment[],
  };
}

const VISIBLE_APP = /* @__PURE__ */ sql(`WITH ${CALLER_CTE}, ${APP_BY_ID_CTE} SELECT id FROM app`);

/** Whether app :app_id exists and the caller may see it: one round trip. */
export async function appIsVisible(db: CallerDb, appId: string): Promise<boolean> {
  const { app } = await db.batch({ app: db.statement(VISIBLE_APP, { app_id: appId }) });
  return app.results.length > 0;
}
