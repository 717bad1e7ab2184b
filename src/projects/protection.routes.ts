import { PROTECTED_ENVIRONMENT_NAMES, type ProtectedEnvironmentName } from "../core/protection.sql.ts";
import { environmentNotFound } from "../http/core-errors";
import { readAs, writeAs } from "../http/d1-session";
import type { ApiError } from "../http/errors";
import { DEMO_PROJECT_ID, DEMO_USER_ID, errorResponse } from "../http/openapi-parts";
import { route } from "../http/route";
import { projectNotFound, protectionOf } from "./errors";
import { PROTECTION_EXAMPLE, ProtectionAnswer, ProtectionBody, ProtectionParams } from "./protection.schemas";
import { changeProtection, readProtection, withDefaults } from "./protection.sql.ts";

const PATH = "/projects/{project_id}/environments/{environment_name}/protection";

/** The environment name of the path, one of those settings exist for; else 404 before any read. */
function environmentOf(name: string): ProtectedEnvironmentName {
  const found = PROTECTED_ENVIRONMENT_NAMES.find((known) => known === name);
  if (!found) throw environmentNotFound();
  return found;
}

const example = {
  project_id: DEMO_PROJECT_ID,
  environment: "production",
  ...PROTECTION_EXAMPLE,
  updated_at: "2026-11-22T02:54:51.236Z",
  updated_by: { user_id: DEMO_USER_ID, username: "ada" },
} as const;

const notFound: Record<string, ApiError> = { projectNotFound: projectNotFound(), environmentNotFound: environmentNotFound() };
const PARAMS = {
  schema: ProtectionParams,
  examples: globalThis.DOCUMENTATION && { project_id: DEMO_PROJECT_ID, environment_name: "production" },
};

/**
 * An environment's protection settings, per project and environment name (docs/CHANGE-REQUESTS.md §1): that
 * environment of every app of the project, present and future. Routed by the project's bucket.
 */
export const protectionRoutes = [
  route(
    {
      method: "get",
      path: PATH,
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [{ name: "GET protection", path: "/projects/{team.projectId}/environments/production/protection", trips: 1 }],
      },
      auth: "key",
      params: PARAMS,
      doc: globalThis.DOCUMENTATION && {
        operationId: "getEnvironmentProtection",
        tag: "Protection",
        summary: "An environment's protection settings in a project",
        description:
          "The settings of the environment of every app of the project: whether it is protected (direct deploys, " +
          "reverts and deletes refused, changes through approved change requests), how many approvals a change " +
          "request needs and from which roles, who may bypass it, how long a request stays open. Never set: every " +
          "setting at its default, `updated_at` and `updated_by` null. Any role.",
        ok: { schema: ProtectionAnswer, description: "The settings", example },
        errors: { 404: errorResponse("No such project visible to the caller, or no such environment name", notFound) },
      },
    },
    async (c) => {
      const { project_id, environment_name } = c.req.valid("param");
      const environment = environmentOf(environment_name);
      const protection = protectionOf(await readAs(c, [project_id], (db) => readProtection(db, project_id, environment)));
      return c.json(protection, 200);
    },
  ),
  route(
    {
      method: "put",
      path: PATH,
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          {
            name: "PUT protection",
            path: "/projects/{team.projectId}/environments/staging/protection",
            body: { protected: true, bypass_roles: ["owner"] },
            trips: 1,
          },
          {
            name: "PUT protection, unchanged",
            path: "/projects/{team.projectId}/environments/staging/protection",
            body: { protected: true, bypass_roles: ["owner"] },
            trips: 1,
          },
        ],
      },
      auth: "key",
      write: true,
      params: PARAMS,
      body: {
        schema: ProtectionBody,
        id: "ProtectionSettings",
        examples: globalThis.DOCUMENTATION && {
          protect: {
            summary: "Protected, two approvals, the other settings at their defaults",
            value: { protected: true, required_approvals: 2 },
          },
          unprotect: { summary: "Every setting at its default: unprotected", value: {} },
        },
      },
      idempotencyKey: "validates",
      doc: globalThis.DOCUMENTATION && {
        operationId: "putEnvironmentProtection",
        tag: "Protection",
        summary: "Replace an environment's protection settings in a project",
        description:
          "Replaces the settings whole: a setting left out takes its default. Owners and workspace admins only (a " +
          "read-only key never). A change is recorded in the audit log with the settings before and after, in the " +
          "same write; settings already so change nothing and record nothing.",
        ok: { schema: ProtectionAnswer, description: "The settings now", example },
        errors: { 404: errorResponse("No such project visible to the caller, or no such environment name", notFound) },
      },
    },
    async (c) => {
      const { project_id, environment_name } = c.req.valid("param");
      const environment = environmentOf(environment_name);
      const settings = withDefaults(c.req.valid("json"));
      const outcome = await writeAs(c, [project_id], (db) => changeProtection(db, project_id, environment, settings));
      return c.json(protectionOf(outcome), 200);
    },
  ),
];
