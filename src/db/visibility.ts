import { type BucketRef, CALLER_KEY } from "./buckets";
import { type Role, WRITER_ROLES } from "./roles";

/** Apps the caller (CALLER_CTE) can see, with the caller's role in the app's organization. */
const MEMBER_APPS = `SELECT a.id, a.name, a.project_id, a.created_at, COALESCE(a.updated_at, a.created_at) AS updated_at, m.role
  FROM apps a
  JOIN projects p ON p.id = a.project_id
  JOIN workspaces w ON w.id = p.workspace_id
  JOIN membership m ON m.organization_id = w.organization_id`;

/** The app :app_id as the caller sees it (no row: no such app, or the caller is not a member): a CTE named `app`. */
export const APP_BY_ID_CTE = `app AS (${MEMBER_APPS} WHERE a.id = :app_id)`;

/** The app of variant :variant_id as the caller sees it: a CTE named `app`. */
export const APP_OF_VARIANT_CTE = `app AS (${MEMBER_APPS} WHERE a.id = (SELECT app_id FROM app_variants WHERE id = :variant_id))`;

/**
 * The app a config request names (`refValues`), as the caller sees it: a CTE named `app`. By id (:app_id; a name
 * :app_name given too must be its name), else by name in the key's project only (an archived app is not found by
 * name), else as the app of variant
 * revision :variant_revision_id, of environment revision :environment_revision_id or of variant :variant_id.
 */
export const APP_BY_REF_CTE = `app AS (${MEMBER_APPS}
  WHERE a.id = CASE
    WHEN :app_id IS NOT NULL THEN :app_id
    WHEN :app_name IS NOT NULL THEN (SELECT id FROM apps WHERE project_id = (SELECT project_id FROM caller) AND name = :app_name
                                                               AND archived_at IS NULL)
    ELSE COALESCE(
      (SELECT v.app_id FROM app_variant_revisions r JOIN app_variants v ON v.id = r.variant_id WHERE r.id = :variant_revision_id),
      (SELECT e.app_id FROM environment_revisions er JOIN environments e ON e.id = er.environment_id WHERE er.id = :environment_revision_id),
      (SELECT app_id FROM app_variants WHERE id = :variant_id)) END
    AND (:app_name IS NULL OR a.name = :app_name))`;

/**
 * What APP_BY_REF_CTE resolves the app by, in its order (`BucketRef`s, for the request's bucket): the app id; else its
 * name, in the key's project; else the variant revision, the environment revision, the variant.
 */
export const appRefOrder = (values: {
  app_id: string | null;
  app_name: string | null;
  variant_revision_id: string | null;
  environment_revision_id: string | null;
  variant_id: string | null;
}): BucketRef[] => [
  values.app_id,
  values.app_name === null ? null : CALLER_KEY,
  values.variant_revision_id,
  values.environment_revision_id,
  values.variant_id,
];

/** What a write found: done, nothing the caller can see, or something the caller may only read. */
export type WriteOutcome = "done" | "not_found" | "forbidden";

/**
 * Why a write made nothing, from its batch's `SELECT role FROM app`: the caller may only read there, or there is
 * nothing the caller can write (no row: nothing visible; a writer: what the write names is missing).
 */
export function refusal(role: D1Result<unknown>): "not_found" | "forbidden" {
  const found = role.results[0] as { role: Role } | undefined;
  return found && !WRITER_ROLES.includes(found.role) ? "forbidden" : "not_found";
}

/** The outcome of a batch with a `SELECT role FROM app` and the write (its RETURNING rows). */
export function writeOutcome(role: D1Result<unknown>, written: D1Result<unknown>): WriteOutcome {
  return written.results.length > 0 ? "done" : refusal(role);
}
