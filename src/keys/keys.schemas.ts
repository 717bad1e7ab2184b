import * as z from "zod/mini";
import { documented, schemaName } from "../http/documentation";
import { queryFlag, uuid } from "../http/fields";

/** `create_api_key`: the client sends `workspace_id` alone; the other two are this service's, and optional. */
export const CreateKeyQuery = /* @__PURE__ */ z.object({
  workspace_id: uuid.apply(
    /* @__PURE__ */ documented(
      globalThis.DOCUMENTATION && { description: "The key is for this workspace's default project; the caller must be a member" },
    ),
  ),
  read_only: queryFlag.apply(
    /* @__PURE__ */ documented(
      globalThis.DOCUMENTATION && {
        description:
          "true: the key reads everything its user can and is refused every write (403), e.g. for an app fetching its config",
      },
    ),
  ),
  expiration_date: z
    .optional(
      z.pipe(
        z.iso.datetime({ offset: true }).check(
          z.refine((value) => Date.parse(value) > Date.now(), {
            message: "expiration_date must be in the future",
            when: (payload) => payload.issues.length === 0,
          }),
        ),
        z.transform((value) => new Date(value).toISOString()),
      ),
    )
    .apply(
      /* @__PURE__ */ documented(
        globalThis.DOCUMENTATION && { description: "When the key stops working (RFC 3339); none: never" },
      ),
    ),
});

export const KeyPrefixParams = /* @__PURE__ */ z.object({
  key_prefix: z
    .string()
    .check(z.maxLength(64))
    .apply(
      /* @__PURE__ */ documented(
        globalThis.DOCUMENTATION && { description: "The key's prefix: the 8 characters before its dot" },
      ),
    ),
});

// Response bodies.

export const ApiKeyListItem = /* @__PURE__ */ z
  .object({
    prefix: z.string(),
    created_at: z.iso.datetime(),
    last_used_at: z
      .nullable(z.iso.datetime())
      .apply(
        /* @__PURE__ */ documented(
          globalThis.DOCUMENTATION && { description: "To the hour: a key's use is recorded at most hourly" },
        ),
      ),
    expiration_date: z.nullable(z.iso.datetime()),
    read_only: z.boolean(),
    project_id: z.uuid(),
    workspace_id: z.uuid(),
    organization_id: z.uuid(),
  })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "ApiKeyListItem"));

export const NewApiKey = /* @__PURE__ */ z
  .string()
  .apply(
    /* @__PURE__ */ documented(
      globalThis.DOCUMENTATION && { description: "The new key, shown this once: only its hash is kept" },
    ),
  )
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "NewApiKey"));

export const DeletedApiKey = /* @__PURE__ */ z
  .object({ prefix: z.string(), revoked_at: z.iso.datetime() })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "DeletedApiKey"));

/** DELETE /keys/{key_prefix}?dry_run=true: the key the delete would revoke; nothing was written. */
export const DeleteApiKeyDryRun = /* @__PURE__ */ z
  .object({ dry_run: z.literal(true), kind: z.literal("delete"), key: ApiKeyListItem })
  .apply(
    /* @__PURE__ */ documented(
      globalThis.DOCUMENTATION && {
        description: "The answer to `?dry_run=true`: the key the delete would revoke, as GET /keys lists it; nothing was written",
      },
    ),
  )
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "DeleteApiKeyDryRun"));

export const ProfileQuery = /* @__PURE__ */ z.object({
  user_id: z
    .optional(uuid)
    .apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "Only the caller's own id: any other is 404" })),
});

export const Profile = /* @__PURE__ */ z
  .object({
    id: z.uuid(),
    username: z.string(),
    email: z.string(),
    created_at: z.iso.datetime(),
  })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "Profile"));
