import { WRITER_ROLES, type Role } from "../db/accounts";
import { findProjectLineages, type ProjectLineage, type TargetKind } from "../db/apps";
import { forbidden, validationFailed } from "../http/errors";
import type { Caller } from "../auth/require-api-key";
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
 * The project a new app goes to: `project_id`, else the default project of `workspace_id`, else of
 * `organization_id`, else the key's project. Every id given must exist and be visible (else 403) and agree
 * with the chosen target (else 422 on that field); the caller must be able to create apps there (else 403).
 */
export async function resolveTargetProject(db: D1Database, caller: Caller, body: CreateAppBody): Promise<string> {
  const given = FIELDS.flatMap(([field, kind]) => (body[field] ? [{ field, kind, id: body[field] }] : []));
  const targets = given.length > 0 ? given : [{ field: "project_id", kind: "project" as const, id: caller.projectId }];
  const lineages = await findProjectLineages(db, caller.userId, targets);

  const visible = lineages.filter((lineage): lineage is ProjectLineage => lineage !== null && lineage.role !== null);
  if (visible.length < lineages.length) throw forbidden();

  const [target] = visible;
  const disagreeing = targets.slice(1).filter(({ kind, id }) => target[LINEAGE_KEY[kind]] !== id);
  if (disagreeing.length > 0) {
    throw validationFailed(
      disagreeing.map(({ field }) => ({
        loc: ["body", field],
        msg: `Value error, ${field} does not contain the target ${targets[0].field.replace("_id", "")}`,
        type: "value_error",
      })),
    );
  }
  if (target.projectId === null || !WRITER_ROLES.includes(target.role as Role)) throw forbidden();
  return target.projectId;
}
