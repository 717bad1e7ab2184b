import { v7 as uuidv7 } from "uuid";
import { CALLER_CTE, type Caller } from "./caller";
import { COMMIT_CTES, refBindings } from "./configs";
import type { Queryable } from "./d1";
import { deploymentStatements, newDeploymentIds } from "./deployments";
import { revisionEvent } from "./events";
import { batchClaimed, type IdempotencyClaim } from "./idempotency";
import { type Role, WRITER_ROLES, WRITER_ROLES_SQL } from "./roles";

/** What a save did: saved (a new config, or a commit over one and its deploy), or why it did nothing. */
export type SaveOutcome =
  | { outcome: "done"; replayed: boolean }
  | { outcome: "not_found" | "forbidden" | "exists" | "key_reused" };

/**
 * The older SDK's save (`POST /configs`), in one batch: config `configName` of app `appId` is made with revision 1
 * holding `params` when the name is free; when it is taken, and `overwrite` is set or its latest params are still
 * {}, its next revision holds `params` and is then deployed to production by the same statements as every deploy
 * (one more revision in production's history); else "exists". The choice is made inside the transaction, so
 * concurrent saves of one name each commit and deploy in turn.
 */
export async function saveConfig(
  db: Queryable,
  caller: Caller,
  save: { appId: string; configName: string; params: Record<string, unknown>; overwrite: boolean },
  claim: IdempotencyClaim | null = null,
): Promise<SaveOutcome> {
  const [variantId, revisionId] = [uuidv7(), uuidv7()];
  const bindings = refBindings(caller, {
    application: { slug: null, version: null, id: save.appId },
    variant: { slug: save.configName, version: null, id: null },
    environment: null,
  });
  const batch = await batchClaimed(db, caller, claim, revisionId, [
    db.prepare(`WITH ${CALLER_CTE}, ${COMMIT_CTES} SELECT role FROM app`).bind(...bindings),
    db
      .prepare(
        `WITH ${CALLER_CTE}, ${COMMIT_CTES}
         INSERT INTO app_variants (id, app_id, name)
         SELECT ?13, app.id, ?7 FROM app WHERE app.role IN ${WRITER_ROLES_SQL} AND NOT EXISTS (SELECT 1 FROM variant)`,
      )
      .bind(...bindings, variantId),
    // Sees the variant the statement above may have made: then it has no revision yet, and this is its revision 1.
    db
      .prepare(
        `WITH ${CALLER_CTE}, ${COMMIT_CTES}
         INSERT INTO app_variant_revisions (id, variant_id, revision, modified_by, params, url)
         SELECT ?13, variant.id, COALESCE(latest.revision, 0) + 1, (SELECT user_id FROM caller), ?14, COALESCE(latest.url, '')
           FROM variant LEFT JOIN latest
          WHERE (SELECT role FROM app) IN ${WRITER_ROLES_SQL}
            AND (latest.revision IS NULL OR ?15 = 1 OR NOT EXISTS (SELECT 1 FROM json_each(latest.params)))`,
      )
      .bind(...bindings, revisionId, JSON.stringify(save.params), save.overwrite ? 1 : 0),
    revisionEvent(db, caller, revisionId),
    ...deploymentStatements(
      db,
      caller,
      {
        application: null,
        variant: { slug: null, version: null, id: revisionId },
        environment: { slug: "production", version: null, id: null },
      },
      newDeploymentIds(),
      { laterRevisionsOnly: true },
    ),
  ]);
  if ("reused" in batch) return { outcome: "key_reused" };
  // The first request made revision `replayOf`; the answer is null either way.
  if ("replayOf" in batch) return { outcome: "done", replayed: true };
  // Every save that writes makes a revision (a new config's first, or the next); one that does not was refused.
  const [role, , revision] = batch.ran;
  if (revision.meta.changes > 0) return { outcome: "done", replayed: false };
  const found = role.results[0] as { role: Role } | undefined;
  if (!found) return { outcome: "not_found" };
  return WRITER_ROLES.includes(found.role) ? { outcome: "exists" } : { outcome: "forbidden" };
}
