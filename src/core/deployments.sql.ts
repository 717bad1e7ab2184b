import { newId } from "../db/buckets";
import { CALLER_CTE } from "../db/caller";
import type { CallerWriteDb } from "../db/handles";
import { batchClaimed, type IdempotencyClaim } from "../db/idempotency";
import { DEPLOYER_ROLES, DEPLOYER_ROLES_SQL, type Role } from "../db/roles";
import { type Results, sql } from "../db/sql";
import { bypassEvent, deploymentEvent } from "./change-events.sql.ts";
import {
  CONFIG_CTES,
  type Config,
  type ConfigRefs,
  configStatement,
  environmentRevisionRefs,
  fetchConfig,
  refValues,
  toConfig,
} from "./configs.sql.ts";
import type { EnvironmentState } from "./environment-etag";
import { GATE_OPEN, PROTECTION_GATE_CTE, type ProtectionPass, type ProtectionRefusal } from "./protection.sql.ts";

/** What a deployment did: the config now deployed (reached through the environment), or why nothing was. */
export type DeploymentOutcome =
  | { outcome: "done"; config: Config; replayed: boolean }
  | { outcome: "not_found"; missing: "app" | "config" | "environment" }
  | { outcome: "forbidden" }
  | { outcome: "removed" }
  | { outcome: "archived" }
  | { outcome: "key_reused" }
  | { outcome: "moved_on"; current: EnvironmentState }
  | { outcome: "refused"; refusal: ProtectionRefusal; appId: string; environment: string };

/**
 * What a deployment deploys and where, as config refs: a variant revision (variant ref: its version or revision
 * id, else the latest; or `variantId`'s latest) to the environment named by the environment ref's slug; or, for a
 * revert, what environment revision `environment.id` deployed, to that revision's environment.
 */
export type DeploymentTarget = ConfigRefs;

/**
 * The environment the deployment goes to (after CONFIG_CTES, binding `refValues`): that of environment revision
 * :environment_revision_id (a revert), else the one named :environment_name; a name given with a revision id must
 * be its environment's.
 */
export const TARGET_ENVIRONMENT = `target AS (
  SELECT e.id, e.revision, e.name FROM environments e
   WHERE e.app_id = (SELECT id FROM app)
     AND e.id = CASE WHEN :environment_revision_id IS NOT NULL
                     THEN (SELECT environment_id FROM environment_revisions WHERE id = :environment_revision_id)
                     ELSE (SELECT id FROM environments WHERE app_id = (SELECT id FROM app) AND name = :environment_name) END
     AND (:environment_name IS NULL OR e.name = :environment_name))`;

const DEPLOYMENT_FACTS = sql<{
  role: Role;
  appId: string;
  revisionId: string | null;
  removed: number;
  archived: number;
  environmentId: string | null;
  environmentRevision: number | null;
  environmentName: string | null;
  refusal: ProtectionRefusal | null;
}>(
  `WITH ${CALLER_CTE}, ${CONFIG_CTES}, ${TARGET_ENVIRONMENT}, ${PROTECTION_GATE_CTE}
   SELECT app.role, app.id AS appId, (SELECT id FROM variant_revision) AS revisionId,
          (SELECT removed_at FROM variant_revision) IS NOT NULL AS removed,
          (SELECT archived_at FROM variant_revision) IS NOT NULL AS archived,
          target.id AS environmentId, target.revision AS environmentRevision, target.name AS environmentName,
          (SELECT refusal FROM gate) AS refusal
     FROM app LEFT JOIN target`,
);

const INSERT_DEPLOYMENT = sql(
  `WITH ${CALLER_CTE}, ${CONFIG_CTES}, ${TARGET_ENVIRONMENT}, ${PROTECTION_GATE_CTE}
   INSERT INTO deployments (id, environment_id, app_variant_revision_id, deployed_by)
   SELECT :deployment_id, target.id, vr.id, (SELECT user_id FROM caller)
     FROM app JOIN variant_revision vr JOIN target
    WHERE app.role IN ${DEPLOYER_ROLES_SQL} AND vr.removed_at IS NULL AND vr.archived_at IS NULL AND (:later_revisions_only = 0 OR vr.revision > 1)
      AND (:expected_environment_id IS NULL OR (target.id = :expected_environment_id AND target.revision = :expected_revision))
      AND ${GATE_OPEN}`,
);

const INSERT_ENVIRONMENT_REVISION = sql(
  `INSERT INTO environment_revisions (id, environment_id, revision, modified_by, deployed_app_variant_revision_id, deployment_id)
   SELECT :environment_revision_id, d.environment_id, e.revision + 1, d.deployed_by, d.app_variant_revision_id, d.id
     FROM deployments d JOIN environments e ON e.id = d.environment_id
    WHERE d.id = :deployment_id`,
);

/** What a deployment makes: its deployment row and the environment's next revision. */
export interface DeploymentIds {
  deploymentId: string;
  environmentRevisionId: string;
}

/**
 * The environment's next revision, of the deployment row `ids.deploymentId` the batch made before it (nothing when it
 * made none): a change request's apply makes its own row (src/change-requests/apply.sql.ts).
 */
export const environmentRevisionStatement = (db: CallerWriteDb, ids: DeploymentIds) =>
  db.statement(INSERT_ENVIRONMENT_REVISION, {
    deployment_id: ids.deploymentId,
    environment_revision_id: ids.environmentRevisionId,
  });

/** The ids of a new deployment of an app of an organization in `bucket`. */
export const newDeploymentIds = (bucket: number): DeploymentIds => ({
  deploymentId: newId(bucket),
  environmentRevisionId: newId(bucket),
});

/**
 * The statements of a deployment of what the target names, to run in one batch (after others, for a save that
 * deploys what it committed): the facts `deploymentOutcome` reads, a deployment row and the environment's next
 * revision, whose insert the database checks (gapless numbering) and follows by moving the environment's current
 * pointers (migrations/0004), then the config deployed. With `expected` (If-Match), the environment must still be in
 * that state, checked by the insert itself inside the transaction; so is the environment's protection (`ProtectionPass`:
 * a bypass, whose event follows; a change request's apply makes its own deployment row: src/change-requests/apply.sql.ts). A removed variant's revision is never deployed, nor an
 * archived one's until it is unarchived (the environments running it keep it: migrations/0010).
 * `laterRevisionsOnly`: a revision 1 is not deployed (a save deploys a config it overwrote, never one it made).
 */
export function deploymentStatements(
  db: CallerWriteDb,
  target: DeploymentTarget,
  ids: DeploymentIds,
  {
    expected = null,
    laterRevisionsOnly = false,
    bypassReason = null,
  }: { expected?: EnvironmentState | null; laterRevisionsOnly?: boolean } & ProtectionPass = {},
) {
  const values = { ...refValues(target), bypass_reason: bypassReason };
  return {
    deploymentFacts: db.statement(DEPLOYMENT_FACTS, values),
    deployment: db.statement(INSERT_DEPLOYMENT, {
      ...values,
      deployment_id: ids.deploymentId,
      expected_environment_id: expected?.environmentId ?? null,
      expected_revision: expected?.revision ?? null,
      later_revisions_only: laterRevisionsOnly ? 1 : 0,
    }),
    environmentRevision: environmentRevisionStatement(db, ids),
    // A revert names no variant, only the environment revision whose deployment it makes again.
    deploymentEvent: deploymentEvent(
      db,
      ids.environmentRevisionId,
      target.variant === null ? (target.environment?.id ?? null) : null,
      null,
    ),
    // Only a bypass can record one: the batch of every other deploy is a statement shorter.
    ...(bypassReason === null ? {} : { bypassEvent: bypassEvent(db, ids.environmentRevisionId, { bypassReason }) }),
    deployed: configStatement(db, environmentRevisionRefs(ids.environmentRevisionId)),
  };
}

/** What the results of `deploymentStatements` say: the config now deployed, or why nothing was. */
export function deploymentOutcome({
  deploymentFacts,
  deployed,
}: Pick<Results<ReturnType<typeof deploymentStatements>>, "deploymentFacts" | "deployed">): Exclude<
  DeploymentOutcome,
  { outcome: "key_reused" }
> {
  const config = toConfig(deployed.results[0]);
  if (config) return { outcome: "done", config, replayed: false };
  const found = deploymentFacts.results[0];
  if (!found) return { outcome: "not_found", missing: "app" };
  if (!DEPLOYER_ROLES.includes(found.role)) return { outcome: "forbidden" };
  if (!found.environmentId || found.environmentRevision === null) return { outcome: "not_found", missing: "environment" };
  if (!found.revisionId) return { outcome: "not_found", missing: "config" };
  if (found.removed) return { outcome: "removed" };
  if (found.archived) return { outcome: "archived" };
  if (found.refusal && found.environmentName) {
    return { outcome: "refused", refusal: found.refusal, appId: found.appId, environment: found.environmentName };
  }
  return { outcome: "moved_on", current: { environmentId: found.environmentId, revision: found.environmentRevision } };
}

/**
 * Deploys what the target names (see `deploymentStatements`) in one batch, with the request's If-Match, claim and
 * pass of a protected environment.
 */
export async function deployConfig(
  db: CallerWriteDb,
  target: DeploymentTarget,
  expected: EnvironmentState | null = null,
  claim: IdempotencyClaim | null = null,
  pass: ProtectionPass = {},
): Promise<DeploymentOutcome> {
  const ids = newDeploymentIds(db.bucket);
  const statements = deploymentStatements(db, target, ids, { expected, ...pass });
  const batch = await batchClaimed(db, claim, ids.environmentRevisionId, statements);
  if ("reused" in batch) return { outcome: "key_reused" };
  if ("replayOf" in batch) {
    const config = await fetchConfig(db, environmentRevisionRefs(batch.replayOf));
    return config ? { outcome: "done", config, replayed: true } : { outcome: "not_found", missing: "environment" };
  }
  return deploymentOutcome(batch.ran);
}
