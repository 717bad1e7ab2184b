import type { Context } from "hono";
import type { BucketRef } from "../db/buckets";
import { shardNameOf } from "../db/pool";
import { type CallerEnv, readAs } from "../http/d1-session";
import { type ApiError, forbidden, validationFailed } from "../http/errors";
import { requestBucket } from "../http/request-bucket";
import { type AppTarget, type CreateRefusal, findCreateRefusal, targetOrder } from "./apps.sql.ts";

// The target's ids in the order that decides it: the first one given names the target.
const TARGET_FIELDS = [
  ["project_id", "projectId", "project"],
  ["workspace_id", "workspaceId", "workspace"],
  ["organization_id", "organizationId", "organization"],
] as const;

/**
 * Why the database refused a create, as the client is told: 403 for an id that does not exist or is not
 * visible; 422 naming each id that disagrees with the target; 403 for a target where the caller may not create
 * (not an owner, workspace_admin or editor there, or no longer, in a race with a change of role).
 */
export function createRefusedError(refusal: CreateRefusal, target: AppTarget): ApiError {
  const given = TARGET_FIELDS.filter(([, key]) => target[key] !== null);
  if (!refusal.target || given.some(([, , kind]) => !refusal.visible[kind])) return forbidden();
  const resolved = refusal.target;
  const disagreeing = given.slice(1).filter(([, key]) => key !== "projectId" && resolved[key] !== target[key]);
  if (disagreeing.length === 0) return forbidden();
  return validationFailed(
    disagreeing.map(([field]) => ({
      loc: ["body", field],
      msg: `Value error, ${field} does not contain the target ${given[0][2]}`,
      type: "value_error",
    })),
  );
}

/**
 * The refusal as the caller's organizations on every shard see it: an id of another shard than the target's is not
 * seen where the create ran, so each such id not seen there is looked for on its own shard (on this error path only),
 * and an id of the caller's that disagrees with the target is told as when both live on one shard (422, not 403).
 */
export async function refusalAcrossShards<E extends CallerEnv>(
  c: Context<E>,
  refusal: CreateRefusal,
  target: AppTarget,
): Promise<CreateRefusal> {
  const shardOf = (refs: BucketRef[]) => shardNameOf(c.env, requestBucket(c, refs));
  const targetShard = shardOf(targetOrder(target));
  const visible = { ...refusal.visible };
  for (const [, key, kind] of TARGET_FIELDS) {
    const id = target[key];
    if (id === null || visible[kind] || shardOf([id]) === targetShard) continue;
    const alone = { projectId: null, workspaceId: null, organizationId: null, [key]: id };
    visible[kind] = (await readAs(c, [id], (db) => findCreateRefusal(db, alone))).visible[kind];
  }
  return { ...refusal, visible };
}
