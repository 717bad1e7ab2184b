import { CALLER_CTE } from "../db/caller";
import type { CallerWriteDb } from "../db/handles";
import { sql } from "../db/sql";
import { CONFIG_CTES, refValues } from "./configs.sql.ts";
import {
  type DeploymentOutcome,
  type DeploymentTarget,
  deploymentOutcome,
  deploymentStatements,
  newDeploymentIds,
  TARGET_ENVIRONMENT,
} from "./deployments.sql.ts";
import { type ConfigDocument, diffDocuments, storedConfigDocument } from "./diff";
import type { EnvironmentState } from "./environment-etag";
import type { ProtectionPass } from "./protection.sql.ts";

/**
 * What a deployment would change (docs/CHANGE-REQUESTS.md §6's dry-run): the target environment's state and what it
 * runs now, and the variant revision it would run; read with the deployment's own facts, nothing written.
 */

/** A config revision an environment runs, or would. */
export interface DeployedRevision {
  variantRevisionId: string;
  configName: string;
  revision: number;
  document: ConfigDocument;
}

/** The part of a dry-run's answer that says what would change (an apply's dry-run answers it too). */
export function deploymentPreview(environmentRevision: number, current: DeployedRevision | null, proposed: DeployedRevision) {
  return {
    next_environment_revision: environmentRevision + 1,
    current: {
      environment_revision: environmentRevision,
      variant_revision_id: current?.variantRevisionId ?? null,
      config_name: current?.configName ?? null,
      revision: current?.revision ?? null,
    },
    proposed: { variant_revision_id: proposed.variantRevisionId, config_name: proposed.configName, revision: proposed.revision },
    diff: diffDocuments(current?.document ?? null, proposed.document),
  };
}

/** A config revision's columns as a DeployedRevision; null where a LEFT JOIN found none. */
function deployedRevision(
  variantRevisionId: string | null,
  configName: string | null,
  revision: number | null,
  params: string | null,
  url: string | null,
): DeployedRevision | null {
  const document = storedConfigDocument({ configName, params, url });
  return variantRevisionId === null || configName === null || revision === null || document === null
    ? null
    : { variantRevisionId, configName, revision, document };
}

/** The target environment (TARGET_ENVIRONMENT), what it runs now (`cur`: none before a first deployment) and `vr`. */
const PREVIEW = sql<{
  appId: string;
  environment: string;
  currentRevisionId: string | null;
  currentConfigName: string | null;
  currentRevision: number | null;
  currentParams: string | null;
  currentUrl: string | null;
  proposedRevisionId: string;
  proposedConfigName: string;
  proposedRevision: number;
  proposedParams: string;
  proposedUrl: string;
}>(
  `WITH ${CALLER_CTE}, ${CONFIG_CTES}, ${TARGET_ENVIRONMENT}
   SELECT app.id AS appId, target.name AS environment,
          cur.id AS currentRevisionId, COALESCE(cv.removed_name, cv.name) AS currentConfigName, cur.revision AS currentRevision,
          cur.params AS currentParams, cur.url AS currentUrl,
          vr.id AS proposedRevisionId, vr.config_name AS proposedConfigName, vr.revision AS proposedRevision,
          vr.params AS proposedParams, vr.url AS proposedUrl
     FROM app JOIN target JOIN variant_revision vr
     JOIN environments e ON e.id = target.id
     LEFT JOIN app_variant_revisions cur ON cur.id = e.deployed_app_variant_revision_id
     LEFT JOIN app_variants cv ON cv.id = cur.variant_id`,
);

/** A dry-run's outcome: what the deployment would do, or why it would do nothing (as `deploymentOutcome` says). */
export type PreviewOutcome =
  | {
      outcome: "preview";
      appId: string;
      environment: string;
      current: EnvironmentState;
      preview: ReturnType<typeof deploymentPreview>;
    }
  | Exclude<DeploymentOutcome, { outcome: "done" | "key_reused" }>;

/**
 * What deploying the target would do, in one read batch: the deployment's own facts and the config it would answer
 * (none, as nothing is written), judged by `deploymentOutcome`, so that a dry-run is refused exactly as the deployment
 * would be; then If-Match, as the deployment's insert checks it; then the preview.
 */
export async function previewDeployment(
  db: CallerWriteDb,
  target: DeploymentTarget,
  expected: EnvironmentState | null,
  pass: ProtectionPass,
): Promise<PreviewOutcome> {
  const { deploymentFacts, deployed } = deploymentStatements(db, target, newDeploymentIds(db.bucket), { expected, ...pass });
  const results = await db.batch({ deploymentFacts, deployed, preview: db.statement(PREVIEW, refValues(target)) });
  const outcome = deploymentOutcome(results);
  if (outcome.outcome === "done") throw new Error("a dry-run found a deployment it did not make");
  if (outcome.outcome !== "moved_on") return outcome;
  const { current } = outcome;
  if (expected && (expected.environmentId !== current.environmentId || expected.revision !== current.revision)) return outcome;
  const row = results.preview.results[0];
  const proposed =
    row &&
    deployedRevision(row.proposedRevisionId, row.proposedConfigName, row.proposedRevision, row.proposedParams, row.proposedUrl);
  if (!row || !proposed) throw new Error("a dry-run's target was found by its facts, not by its preview");
  const now = deployedRevision(
    row.currentRevisionId,
    row.currentConfigName,
    row.currentRevision,
    row.currentParams,
    row.currentUrl,
  );
  return {
    outcome: "preview",
    appId: row.appId,
    environment: row.environment,
    current,
    preview: deploymentPreview(current.revision, now, proposed),
  };
}
