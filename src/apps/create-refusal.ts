import { type ApiError, forbidden, validationFailed } from "../http/errors";
import type { AppTarget, CreateRefusal } from "./apps.sql.ts";

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
