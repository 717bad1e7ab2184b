import { revisionEvent } from "../core/change-events.sql.ts";
import { COMMIT_CTES, refValues } from "../core/configs.sql.ts";
import { deploymentStatements, newDeploymentIds } from "../core/deployments.sql.ts";
import { type DocumentDiff, diffDocuments, storedConfigDocument } from "../core/diff";
import { GATE_OPEN, PROTECTION_GATE_CTE, type ProtectionRefusal } from "../core/protection.sql.ts";
import { newId } from "../db/buckets";
import { CALLER_CTE } from "../db/caller";
import type { CallerWriteDb } from "../db/handles";
import { batchClaimed, type IdempotencyClaim } from "../db/idempotency";
import { type Role, WRITER_ROLES, WRITER_ROLES_SQL } from "../db/roles";
import { sql } from "../db/sql";

/** What a save did: saved (a new config, or a commit over one and its deploy), or why it did nothing. */
export type SaveOutcome =
  | { outcome: "done"; replayed: boolean }
  | { outcome: "not_found" | "forbidden" | "exists" | "archived" | "key_reused" }
  | { outcome: "refused"; refusal: ProtectionRefusal; appId: string; environment: string };

/** A save of `POST /configs`: the app, the config's name, its params, and whether an existing config is overwritten. */
export interface ConfigSave {
  appId: string;
  configName: string;
  params: Record<string, unknown>;
  overwrite: boolean;
}

/** What a save's statements (and its dry-run's) are bound with: the app and config it names, and how it may write. */
function saveValues(save: ConfigSave, bypassReason: string | null) {
  return {
    ...refValues({
      application: { slug: null, version: null, id: save.appId },
      variant: { slug: save.configName, version: null, id: null },
      environment: null,
    }),
    overwrite: save.overwrite ? 1 : 0,
    bypass_reason: bypassReason,
  };
}

/**
 * The older SDK's save (`POST /configs`), in one batch: config `configName` of app `appId` is made with revision 1
 * holding `params` when the name is free; when it is taken, and `overwrite` is set or its latest params are still
 * {}, its next revision holds `params` and is then deployed to production by the same statements as every deploy
 * (one more revision in production's history); else "exists". The choice is made inside the transaction, so
 * concurrent saves of one name each commit and deploy in turn. An archived config's name stays taken, and is not
 * saved to until it is unarchived: "archived". A save that would deploy to a protected production is refused whole
 * (no revision either), unless bypassed (`bypassReason`): "refused".
 */
export async function saveConfig(
  db: CallerWriteDb,
  save: ConfigSave,
  claim: IdempotencyClaim | null = null,
  bypassReason: string | null = null,
): Promise<SaveOutcome> {
  const [variantId, revisionId] = [newId(db.bucket), newId(db.bucket)];
  const values = saveValues(save, bypassReason);
  const batch = await batchClaimed(db, claim, revisionId, {
    role: db.statement(ROLE, values),
    variant: db.statement(SAVE_VARIANT, { ...values, new_variant_id: variantId }),
    revision: db.statement(SAVE_REVISION, {
      ...values,
      revision_id: revisionId,
      params: JSON.stringify(save.params),
    }),
    event: revisionEvent(db, revisionId, variantId),
    ...deploymentStatements(
      db,
      {
        application: null,
        variant: { slug: null, version: null, id: revisionId },
        environment: { slug: "production", version: null, id: null },
      },
      newDeploymentIds(db.bucket),
      { laterRevisionsOnly: true, bypassReason },
    ),
  });
  if ("reused" in batch) return { outcome: "key_reused" };
  // The first request made revision `replayOf`; the answer is null either way.
  if ("replayOf" in batch) return { outcome: "done", replayed: true };
  // Every save that writes makes a revision (a new config's first, or the next); one that does not was refused.
  const { role, revision } = batch.ran;
  if (revision.meta.changes > 0) return { outcome: "done", replayed: false };
  const found = role.results[0];
  if (!found) return { outcome: "not_found" };
  if (!WRITER_ROLES.includes(found.role)) return { outcome: "forbidden" };
  if (found.archived) return { outcome: "archived" };
  return found.refusal
    ? { outcome: "refused", refusal: found.refusal, appId: save.appId, environment: "production" }
    : { outcome: "exists" };
}

const ARCHIVED_OF_THAT_NAME = `EXISTS (SELECT 1 FROM app_variants WHERE app_id = (SELECT id FROM app) AND name = :config_name
                                          AND archived_at IS NOT NULL)`;

/** After COMMIT_CTES: the save goes over the config's latest revision, and deploys (its name taken, and the overwrite allowed). */
const OVERWRITES = `EXISTS (SELECT 1 FROM latest WHERE :overwrite = 1 OR NOT EXISTS (SELECT 1 FROM json_each(latest.params)))`;

/** The environment a save that overwrites deploys to, for PROTECTION_GATE_CTE. */
const PRODUCTION = `target AS (SELECT 'production' AS name)`;

const ROLE = sql<{ role: Role; archived: number; refusal: ProtectionRefusal | null }>(
  `WITH ${CALLER_CTE}, ${COMMIT_CTES}, ${PRODUCTION}, ${PROTECTION_GATE_CTE}
   SELECT role, ${ARCHIVED_OF_THAT_NAME} AS archived, CASE WHEN ${OVERWRITES} THEN (SELECT refusal FROM gate) END AS refusal FROM app`,
);

const SAVE_VARIANT = sql(
  `WITH ${CALLER_CTE}, ${COMMIT_CTES}
   INSERT INTO app_variants (id, app_id, name)
   SELECT :new_variant_id, app.id, :config_name FROM app
    WHERE app.role IN ${WRITER_ROLES_SQL} AND NOT EXISTS (SELECT 1 FROM variant) AND NOT ${ARCHIVED_OF_THAT_NAME}`,
);

// Sees the variant SAVE_VARIANT may have made: then it has no revision yet, and this is its revision 1. One that
// overwrites, which production's protection may refuse, is made only if the deploy that follows it will be.
const SAVE_REVISION = sql(
  `WITH ${CALLER_CTE}, ${COMMIT_CTES}, ${PRODUCTION}, ${PROTECTION_GATE_CTE}
   INSERT INTO app_variant_revisions (id, variant_id, revision, modified_by, params, url)
   SELECT :revision_id, variant.id, COALESCE(latest.revision, 0) + 1, (SELECT user_id FROM caller), :params, COALESCE(latest.url, '')
     FROM variant LEFT JOIN latest
    WHERE (SELECT role FROM app) IN ${WRITER_ROLES_SQL} AND (latest.revision IS NULL OR (${OVERWRITES} AND ${GATE_OPEN}))`,
);

// The save's own facts (ROLE's), with what it would go over and what production runs now.
const SAVE_PREVIEW = sql<{
  role: Role;
  archived: number;
  refusal: ProtectionRefusal | null;
  variantId: string | null;
  latest: number | null;
  latestUrl: string | null;
  overwrites: number;
  environmentRevision: number;
  currentRevisionId: string | null;
  currentConfigName: string | null;
  currentRevision: number | null;
  currentParams: string | null;
  currentUrl: string | null;
}>(
  `WITH ${CALLER_CTE}, ${COMMIT_CTES}, ${PRODUCTION}, ${PROTECTION_GATE_CTE}
   SELECT app.role, ${ARCHIVED_OF_THAT_NAME} AS archived, CASE WHEN ${OVERWRITES} THEN (SELECT refusal FROM gate) END AS refusal,
          (SELECT id FROM variant) AS variantId, (SELECT revision FROM latest) AS latest, (SELECT url FROM latest) AS latestUrl,
          ${OVERWRITES} AS overwrites, e.revision AS environmentRevision,
          cur.id AS currentRevisionId, COALESCE(cv.removed_name, cv.name) AS currentConfigName, cur.revision AS currentRevision,
          cur.params AS currentParams, cur.url AS currentUrl
     FROM app JOIN environments e ON e.app_id = app.id AND e.name = 'production'
     LEFT JOIN app_variant_revisions cur ON cur.id = e.deployed_app_variant_revision_id
     LEFT JOIN app_variants cv ON cv.id = cur.variant_id`,
);

/** What a save would do: make a config's revision (`revision`), and deploy it to production (`deploy`), or not. */
export interface SavePreview {
  outcome: "preview";
  revision: number;
  deploy: {
    environment: "production";
    next_environment_revision: number;
    current: {
      environment_revision: number;
      variant_revision_id: string | null;
      config_name: string | null;
      revision: number | null;
    };
    diff: DocumentDiff;
  } | null;
}

/**
 * `saveConfig`'s dry-run: its facts read as it reads them and judged in its order, with what production runs now and
 * the diff the deploy would make; one read, nothing written.
 */
export async function previewSave(
  db: CallerWriteDb,
  save: ConfigSave,
  bypassReason: string | null,
): Promise<SavePreview | Exclude<SaveOutcome, { outcome: "done" | "key_reused" }>> {
  const values = saveValues(save, bypassReason);
  const { facts } = await db.batch({ facts: db.statement(SAVE_PREVIEW, values) });
  const found = facts.results[0];
  if (!found) return { outcome: "not_found" };
  if (!WRITER_ROLES.includes(found.role)) return { outcome: "forbidden" };
  if (found.archived) return { outcome: "archived" };
  if (found.latest === null) return { outcome: "preview", revision: 1, deploy: null };
  if (!found.overwrites) return { outcome: "exists" };
  if (found.refusal) return { outcome: "refused", refusal: found.refusal, appId: save.appId, environment: "production" };
  const current = storedConfigDocument({
    configName: found.currentConfigName,
    params: found.currentParams,
    url: found.currentUrl,
  });
  // The revision's document as it would be stored, and read back.
  const proposed = storedConfigDocument({
    configName: save.configName,
    params: JSON.stringify(save.params),
    url: found.latestUrl ?? "",
  });
  return {
    outcome: "preview",
    revision: found.latest + 1,
    deploy: {
      environment: "production",
      next_environment_revision: found.environmentRevision + 1,
      current: {
        environment_revision: found.environmentRevision,
        variant_revision_id: found.currentRevisionId,
        config_name: found.currentConfigName,
        revision: found.currentRevision,
      },
      diff: diffDocuments(current, proposed),
    },
  };
}
