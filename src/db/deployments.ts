import { v7 as uuidv7 } from "uuid";
import { type Role, WRITER_ROLES, WRITER_ROLES_SQL } from "./accounts";
import { batchAsCaller, CALLER_CTE, type Caller } from "./caller";
import { CONFIG_CTES, type Config, type ConfigRow, configStatement, type Ref, refBindings, toConfig } from "./configs";
import type { Queryable } from "./d1";

/** What a deployment did: the config now deployed (reached through the environment), or why nothing was. */
export type DeploymentOutcome =
  | { outcome: "done"; config: Config }
  | { outcome: "not_found"; missing: "app" | "config" | "environment" }
  | { outcome: "forbidden" };

/**
 * Deploys the variant revision the refs name (its version or revision id; else the latest) to environment
 * `environmentName` of the app, deployed before or not, in one batch: a deployment row, the environment's next
 * revision, and the environment's current pointers moved. The revision number is the environment's + 1, read
 * and written inside the transaction and guarded by UNIQUE (environment_id, revision).
 */
export async function deployConfig(
  db: Queryable,
  caller: Caller,
  target: { application: Ref | null; variant: Ref; environmentName: string },
): Promise<DeploymentOutcome> {
  const [deploymentId, environmentRevisionId] = [uuidv7(), uuidv7()];
  // The environment rides as ?9 (the environment slug), which variant mode leaves to the environment alone.
  const bindings = refBindings(caller, {
    application: target.application,
    variant: target.variant,
    environment: { slug: target.environmentName, version: null, id: null },
  });
  const [facts, , , , deployed] = await batchAsCaller<unknown>(db, caller, [
    db
      .prepare(
        `WITH ${CALLER_CTE}, ${CONFIG_CTES}
         SELECT app.role, (SELECT id FROM variant_revision) AS revisionId,
                (SELECT id FROM environments WHERE app_id = app.id AND name = ?9) AS environmentId
           FROM app`,
      )
      .bind(...bindings),
    db
      .prepare(
        `WITH ${CALLER_CTE}, ${CONFIG_CTES}
         INSERT INTO deployments (id, environment_id, app_variant_revision_id, deployed_by)
         SELECT ?12, e.id, vr.id, (SELECT user_id FROM caller)
           FROM app JOIN variant_revision vr JOIN environments e ON e.app_id = app.id AND e.name = ?9
          WHERE app.role IN ${WRITER_ROLES_SQL}`,
      )
      .bind(...bindings, deploymentId),
    db
      .prepare(
        `INSERT INTO environment_revisions (id, environment_id, revision, modified_by, deployed_app_variant_revision_id, deployment_id)
         SELECT ?2, d.environment_id, e.revision + 1, d.deployed_by, d.app_variant_revision_id, d.id
           FROM deployments d JOIN environments e ON e.id = d.environment_id
          WHERE d.id = ?1`,
      )
      .bind(deploymentId, environmentRevisionId),
    db
      .prepare(
        `UPDATE environments
            SET revision = revision + 1,
                deployed_app_variant_revision_id = d.app_variant_revision_id,
                deployed_app_variant_id = (SELECT variant_id FROM app_variant_revisions WHERE id = d.app_variant_revision_id)
           FROM (SELECT environment_id, app_variant_revision_id FROM deployments WHERE id = ?1) AS d
          WHERE environments.id = d.environment_id`,
      )
      .bind(deploymentId),
    configStatement(db, caller, {
      application: null,
      variant: null,
      environment: { slug: null, version: null, id: environmentRevisionId },
    }),
  ]);
  const config = toConfig(deployed.results[0] as ConfigRow | undefined);
  if (config) return { outcome: "done", config };
  const found = facts.results[0] as { role: Role; revisionId: string | null; environmentId: string | null } | undefined;
  if (!found) return { outcome: "not_found", missing: "app" };
  if (!WRITER_ROLES.includes(found.role)) return { outcome: "forbidden" };
  return { outcome: "not_found", missing: found.environmentId ? "config" : "environment" };
}
