import * as z from "zod/mini";
import { currentRef } from "../http/current-api";
import { documented, schemaName } from "../http/documentation";
import { nameField, uuid } from "../http/fields";

export const QueryEnvironmentsBody = /* @__PURE__ */ z.object({
  environment: z.nullish(
    z.object({
      slug: z
        .nullish(nameField("slug"))
        .apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "Only the environment of this name" })),
    }),
  ),
  environment_refs: z.nullish(z.array(currentRef("An environment's name")).check(z.maxLength(100))).apply(
    /* @__PURE__ */ documented(
      globalThis.DOCUMENTATION && {
        description: "Only environments one of these names (`slug`) or is (`id`); `version` is ignored",
      },
    ),
  ),
  include_archived: z
    .nullish(z.boolean())
    .apply(
      /* @__PURE__ */ documented(
        globalThis.DOCUMENTATION && { description: "Ignored: archived apps are left out of `references`" },
      ),
    ),
});

const Reference = /* @__PURE__ */ z.object({ id: /* @__PURE__ */ z.uuid(), slug: /* @__PURE__ */ z.string() });

export const SimpleEnvironment = /* @__PURE__ */ z
  .object({
    id: z
      .uuid()
      .apply(
        /* @__PURE__ */ documented(
          globalThis.DOCUMENTATION && { description: "The same for every read of this name in the project" },
        ),
      ),
    slug: z.string(),
    name: z.string(),
    flags: z.object({
      is_guarded: z.boolean().apply(
        /* @__PURE__ */ documented(
          globalThis.DOCUMENTATION && {
            description: "The project's environment of this name is protected: it changes through approved change requests",
          },
        ),
      ),
    }),
    data: z.object({
      references: z
        .record(
          z.string(),
          z.object({
            application: Reference,
            application_variant: Reference,
            application_revision: z.extend(Reference, { version: z.string() }),
          }),
        )
        .apply(
          /* @__PURE__ */ documented(
            globalThis.DOCUMENTATION && {
              description: 'Per app ("<app name>.revision"): what its environment of this name runs',
            },
          ),
        ),
    }),
    version: z.optional(z.string()).apply(
      /* @__PURE__ */ documented(
        globalThis.DOCUMENTATION && {
          description: "The environment revision of the latest deployment of this name in the project (left out before any)",
        },
      ),
    ),
    created_at: z.iso.datetime(),
    updated_at: z.optional(z.iso.datetime()),
    updated_by_id: z.optional(z.uuid()),
  })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "SimpleEnvironment"));
export type SimpleEnvironment = z.infer<typeof SimpleEnvironment>;

export const SimpleEnvironmentParams = /* @__PURE__ */ z.object({
  environment_id: uuid.apply(
    /* @__PURE__ */ documented(
      globalThis.DOCUMENTATION && { description: "An environment's id, as POST /simple/environments/query answers it" },
    ),
  ),
});

export const SimpleEnvironmentAnswer = /* @__PURE__ */ z
  .object({ count: z.literal(1), environment: SimpleEnvironment })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "SimpleEnvironmentAnswer"));

export const SimpleEnvironmentsAnswer = /* @__PURE__ */ z
  .object({ count: z.int(), environments: z.array(SimpleEnvironment) })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "SimpleEnvironmentsAnswer"));
