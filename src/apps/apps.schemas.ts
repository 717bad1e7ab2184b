import * as z from "zod/mini";
import { documented, schemaName } from "../http/documentation";
import { nameField, newNameField, uuid } from "../http/fields";
import type { AppSummary } from "./apps.sql.ts";

const appName = /* @__PURE__ */ newNameField("app_name").apply(
  /* @__PURE__ */ documented(
    globalThis.DOCUMENTATION && {
      description:
        "Not blank, no control characters or line breaks; no invisible, formatting or bidi characters, fillers, spaces other than U+0020, " +
        "private-use or unassigned code points; a visible character, not a combining mark first; one script, or Latin with " +
        "Han and Hiragana/Katakana, Bopomofo or Hangul. Stored NFC-normalised, unique per project",
    },
  ),
);

export const CreateAppBody = /* @__PURE__ */ z.object({
  app_name: appName,
  project_id: z.nullish(uuid),
  workspace_id: z.nullish(uuid),
  organization_id: z.nullish(uuid),
});
export type CreateAppBody = z.infer<typeof CreateAppBody>;

export const UpdateAppBody = /* @__PURE__ */ z.object({ app_name: appName });

export const ListAppsQuery = /* @__PURE__ */ z.object({
  app_name: z
    .optional(nameField("app_name", { nfc: true }))
    .apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "Only the app of this name (exact)" })),
  workspace_id: z
    .optional(uuid)
    .apply(
      /* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "The apps of this workspace's default project" }),
    ),
});

// Response bodies are the typed shapes of what the routes answer, and the source of the OpenAPI document, whose
// test checks real responses against them; nothing parses them at run time.

export const CreateAppOutput = /* @__PURE__ */ z
  .object({
    app_id: z.uuid(),
    app_name: z.string(),
  })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "CreateAppOutput"));
export type CreateAppOutput = z.infer<typeof CreateAppOutput>;

export const AppListItem = /* @__PURE__ */ z
  .object({
    app_id: z.uuid(),
    app_name: z.string(),
    updated_at: z.iso
      .datetime()
      .apply(
        /* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "When the app was last renamed, else created" }),
      ),
  })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "AppListItem"));
export type AppListItem = z.infer<typeof AppListItem>;

export const toAppListItem = (app: AppSummary): AppListItem => ({
  app_id: app.id,
  app_name: app.name,
  updated_at: app.updatedAt,
});

/** DELETE /apps/{app_id}?dry_run=true: what the delete would remove; nothing was written. */
export const DeleteAppDryRun = /* @__PURE__ */ z
  .object({
    dry_run: z.literal(true),
    app_id: z.uuid(),
    app_name: z.string(),
    kind: z.literal("delete"),
    configs: z
      .int()
      .apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "The configs deleted with the app" })),
    environments: z
      .array(
        z.object({
          environment: z.string(),
          environment_revision: z.int(),
          config_name: z.string(),
          revision: z.int(),
          protected: z.boolean(),
        }),
      )
      .apply(
        /* @__PURE__ */ documented(
          globalThis.DOCUMENTATION && {
            description: "The environments that run a config (which revision), and would serve nothing once it is deleted",
          },
        ),
      ),
  })
  .apply(
    /* @__PURE__ */ documented(
      globalThis.DOCUMENTATION && {
        description: "The answer to `?dry_run=true`: what the delete would remove; nothing was written",
      },
    ),
  )
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "DeleteAppDryRun"));
export type DeleteAppDryRun = z.infer<typeof DeleteAppDryRun>;
