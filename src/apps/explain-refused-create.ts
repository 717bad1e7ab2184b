import type { KeyCredentials, Queryable } from "../db/accounts";
import { findProjectLineages, type ProjectLineage, type TargetKind } from "../db/apps";
import { forbidden, unauthorized, validationFailed } from "../http/errors";
import type { CreateAppBody } from "./apps.schemas";

const FIELDS = [
  ["project_id", "project"],
  ["workspace_id", "workspace"],
  ["organization_id", "organization"],
] as const satisfies readonly (readonly [keyof CreateAppBody, TargetKind])[];

/** Which lineage value a given id must agree with. */
const LINEAGE_KEY: Record<TargetKind, keyof ProjectLineage> = {
  project: "projectId",
  workspace: "workspaceId",
  organization: "organizationId",
};

/**
 * Called when the database refused a create (see `createAppAsCaller`) to tell the client precisely why, at the
 * cost of one more round trip on this error path only: 401 for a key that is not live; 403 for an id that does
 * not exist or is not visible; 422 naming each id that disagrees with the target; 403 for a target where the
 * caller may not create. Always throws.
 */
export async function explainRefusedCreate(db: Queryable, credentials: KeyCredentials, body: CreateAppBody): Promise<never> {
  const given = FIELDS.flatMap(([field, kind]) => (body[field] ? [{ field, kind, id: body[field] }] : []));
  const { authenticated, lineages } = await findProjectLineages(
    db,
    credentials,
    given.length > 0 ? given : [{ kind: "key", id: null }],
  );
  if (!authenticated) throw unauthorized();

  const visible = lineages.filter((lineage): lineage is ProjectLineage => lineage !== null && lineage.role !== null);
  if (visible.length < lineages.length) throw forbidden();

  const [target] = visible;
  const disagreeing = given.slice(1).filter(({ kind, id }) => target[LINEAGE_KEY[kind]] !== id);
  if (disagreeing.length > 0) {
    throw validationFailed(
      disagreeing.map(({ field }) => ({
        loc: ["body", field],
        msg: `Value error, ${field} does not contain the target ${given[0].field.replace("_id", "")}`,
        type: "value_error",
      })),
    );
  }
  // The target is visible and agrees: the caller is not an owner, admin or editor there (or, in a race with
  // a change of role between the two round trips, no longer is).
  throw forbidden();
}
