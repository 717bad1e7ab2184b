import * as z from "zod/mini";
import { APPROVER_ROLES, BYPASS_ROLES, PROTECTED_ENVIRONMENT_NAMES, PROTECTION_DEFAULTS } from "../core/protection.sql.ts";
import type { Role } from "../db/roles";
import { documented, schemaName } from "../http/documentation";
import { uuid } from "../http/fields";

export const ProtectionParams = /* @__PURE__ */ z.object({
  project_id: uuid,
  environment_name: z
    .string()
    .apply(
      /* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: `One of ${PROTECTED_ENVIRONMENT_NAMES.join(", ")}` }),
    ),
});

/** A role list: each role of `roles` (an unknown one is a 422); one named twice counts once. */
const roleList = <R extends readonly [Role, ...Role[]]>(roles: R, description: string) =>
  z
    .array(z.enum(roles))
    .check(z.maxLength(10))
    .apply(documented(globalThis.DOCUMENTATION && { description }));

const settingsShape = {
  protected: z.boolean().apply(
    documented(
      globalThis.DOCUMENTATION && {
        description:
          "Direct deploys, reverts and deletes of the environment are refused (409); it changes through approved " +
          "change requests",
      },
    ),
  ),
  required_approvals: z.int().check(z.gte(1), z.lte(10)),
  allow_self_approval: z
    .boolean()
    .apply(documented(globalThis.DOCUMENTATION && { description: "Whether a request's author may approve it: owners too" })),
  approver_roles: roleList(APPROVER_ROLES, "The roles whose approvals count").check(z.minLength(1)),
  bypass_roles: roleList(BYPASS_ROLES, "The roles that may bypass the protection with a Protection-Bypass header"),
  request_ttl_days: z
    .int()
    .check(z.gte(1), z.lte(90))
    .apply(documented(globalThis.DOCUMENTATION && { description: "Days a change request stays open after its last change" })),
};

/** PUT's body: the settings, every one optional (left out: its default); nothing else. */
export const ProtectionBody = /* @__PURE__ */ z.partial(z.strictObject(settingsShape));

export const ProtectionAnswer = /* @__PURE__ */ z
  .object({
    project_id: z.uuid(),
    environment: z.enum(PROTECTED_ENVIRONMENT_NAMES),
    ...settingsShape,
    updated_at: z
      .nullable(z.iso.datetime())
      .apply(
        /* @__PURE__ */ documented(
          globalThis.DOCUMENTATION && { description: "Null while every setting is at its default, never set" },
        ),
      ),
    updated_by: z.nullable(z.object({ user_id: z.uuid(), username: z.string() })),
  })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "Protection"));

/** The example of the answers, and of the PUT that made it. */
export const PROTECTION_EXAMPLE = {
  ...PROTECTION_DEFAULTS,
  protected: true,
  required_approvals: 2,
  approver_roles: ["owner", "workspace_admin", "deployment_manager"],
  bypass_roles: [],
} as const;
