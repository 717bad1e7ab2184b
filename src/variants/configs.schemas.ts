import * as z from "zod/mini";
import type { Config, ConfigRefs, Ref } from "../core/configs.sql.ts";
import { parseJsonExactly } from "../db/exact-json";
import { documented, schemaName } from "../http/documentation";
import { validationFailed } from "../http/errors";
import {
  commitMessage,
  httpUrlOrEmpty,
  jsonObject,
  MAX_JSON_DEPTH,
  nameField,
  narrowedBy,
  nestsDeeperThan,
  newNameField,
  uuid,
} from "../http/fields";

/**
 * A reference `{slug, version, id}`, every key optional (missing = null); one whose three values are all null
 * counts as absent (null). Unknown keys are ignored, and so is `commit_message` but where a commit stores it.
 */
const refShape = (slug: z.ZodMiniType<string>, id: string) => ({
  slug: z.nullish(slug),
  version: z
    .nullish(z.int().check(z.gte(0)))
    .apply(documented(globalThis.DOCUMENTATION && { description: '0 is version 0 (not "latest")' })),
  id: z.nullish(uuid).apply(documented(globalThis.DOCUMENTATION && { description: id })),
});

type RefInput = { slug?: string | null; version?: number | null; id?: string | null } | null | undefined;

const toRef = (value: RefInput): Ref | null =>
  value && (value.slug != null || value.version != null || value.id != null)
    ? { slug: value.slug ?? null, version: value.version ?? null, id: value.id ?? null }
    : null;

const ref = (slug: z.ZodMiniType<string>, id: string) => z.pipe(z.nullish(z.object(refShape(slug, id))), z.transform(toRef));

export const applicationRef = /* @__PURE__ */ ref(
  nameField("slug", { nfc: true }).apply(
    /* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "The app's name" }),
  ),
  "The app's id",
);
const variantSlug = /* @__PURE__ */ nameField("slug", { nfc: true }).apply(
  /* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "The config name" }),
);
export const variantRef = /* @__PURE__ */ ref(variantSlug, "A variant revision's id");
/** The variant ref of a legacy commit, with the message the commit stores (`commit_message`, as the platform's clients send it). */
const committedVariantRef = /* @__PURE__ */ z.pipe(
  z.nullish(
    z.object({
      ...refShape(variantSlug, "A variant revision's id"),
      commit_message: z
        .nullish(commitMessage("commit_message"))
        .apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "Stored with the new revision" })),
    }),
  ),
  z.transform((value) => {
    const found = toRef(value);
    return found && { ...found, message: value?.commit_message ?? null };
  }),
);

export const environmentRef = /* @__PURE__ */ ref(
  nameField("slug").apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "The environment's name" })),
  "An environment revision's id",
);

type Refs = { application_ref?: Ref | null; variant_ref?: Ref | null; environment_ref?: Ref | null };

/**
 * When a body's own checks run (superRefine's `when`): once every field is valid, as the platform's model validators
 * run only after its fields validate, so a bad field is not also reported as the refs' rule it happens to break.
 */
export const ONCE_FIELDS_ARE_VALID = { when: (payload: z.core.ParsePayload) => payload.issues.length === 0 };

/**
 * A ref by slug is looked up within an app, so the app must be named: by `application_ref`, or by the revision an
 * id names (a variant revision's; an environment revision's too where the route reads `environment_ref`).
 */
export const requireResolvableRefs =
  ({ readsEnvironmentRef }: { readsEnvironmentRef: boolean }) =>
  (body: Refs, context: z.core.$RefinementCtx<Refs>) => {
    const { application_ref: application, variant_ref: variant, environment_ref: environment } = body;
    for (const [key, value] of [
      ["variant_ref", variant],
      ["environment_ref", environment],
      ["application_ref", application],
    ] as const) {
      if (value && value.slug === null && value.id === null) {
        context.addIssue({ code: "custom", path: [key], message: `${key} needs a slug or an id` });
      }
    }
    const namedById = variant?.id != null || (readsEnvironmentRef && environment?.id != null);
    if (!application && !namedById) {
      context.addIssue({
        code: "custom",
        path: ["application_ref"],
        message: readsEnvironmentRef
          ? "application_ref is required unless variant_ref or environment_ref has an id"
          : "application_ref is required unless variant_ref has an id (environment_ref is not read here)",
      });
    }
  };

export const FetchConfigBody = /* @__PURE__ */ z
  .object({ variant_ref: variantRef, environment_ref: environmentRef, application_ref: applicationRef })
  .check(z.superRefine(requireResolvableRefs({ readsEnvironmentRef: true }), ONCE_FIELDS_ARE_VALID));

export const AddConfigBody = /* @__PURE__ */ z.object({
  variant_ref: z
    .object({
      slug: newNameField("slug").apply(
        /* @__PURE__ */ documented(
          globalThis.DOCUMENTATION && { description: "The new config's name: the rules of a new app_name" },
        ),
      ),
    })
    .apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "Only `slug` is used" })),
  application_ref: narrowedBy(applicationRef, (value) => value !== null, "application_ref needs a slug or an id"),
});

export const CommitConfig = /* @__PURE__ */ z
  .object({
    params: jsonObject("params").apply(
      /* @__PURE__ */ documented(
        globalThis.DOCUMENTATION && {
          description: `Replaces the config's params (no merge); at most ${MAX_JSON_DEPTH} levels deep; numbers kept digit for digit`,
        },
      ),
    ),
    url: z.nullish(httpUrlOrEmpty("url")).apply(
      /* @__PURE__ */ documented(
        globalThis.DOCUMENTATION && {
          description: 'Replaces the url: "" or an absolute http(s) URL; omitted or null: the latest\'s is kept',
        },
      ),
    ),
    application_ref: applicationRef,
    variant_ref: narrowedBy(committedVariantRef, (value) => value !== null, "variant_ref needs a slug or an id"),
    service_ref: z
      .optional(z.unknown())
      .apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "Ignored" })),
    environment_ref: environmentRef.apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "Ignored" })),
  })
  .check(z.superRefine(requireResolvableRefs({ readsEnvironmentRef: false }), ONCE_FIELDS_ARE_VALID));

const unwrap = (body: unknown) =>
  typeof body === "object" && body !== null && "config" in body && !("params" in body) ? body.config : body;

/** The commit body, flat or wrapped as `{"config": {...}}` (as later clients send it). */
export const CommitConfigBody = /* @__PURE__ */ z.pipe(z.transform(unwrap), CommitConfig);

/**
 * How deep a body whose params are read as sent may nest anywhere: its params are bounded by validation, but a field
 * the route ignores is not, and the exact reader recurses (past a few thousand levels, a stack overflow). SQLite's
 * own limit for JSON.
 */
export const MAX_BODY_DEPTH = 1000;

/** A valid body's text parsed again with every number as sent (see `paramsAsSent`); 422 when it nests too deep. */
export function bodyAsSent(text: string): unknown {
  if (nestsDeeperThan(JSON.parse(text), MAX_BODY_DEPTH)) {
    throw validationFailed([
      { loc: ["body"], msg: `Value error, the body must not nest deeper than ${MAX_BODY_DEPTH} levels`, type: "value_error" },
    ]);
  }
  return parseJsonExactly(text);
}

/**
 * The params of a valid commit body's text, every number as sent: the validated body was parsed by `JSON.parse`,
 * which turns 9007199254740993 into 9007199254740992.
 */
export const paramsAsSent = (text: string) => (unwrap(bodyAsSent(text)) as { params: Record<string, unknown> }).params;

/** The `parameters` of a valid body's text, every number as sent (see `paramsAsSent`). */
export const parametersAsSent = (text: string) => (bodyAsSent(text) as { parameters: Record<string, unknown> }).parameters;

export const toConfigRefs = (body: Refs): ConfigRefs => ({
  application: body.application_ref ?? null,
  variant: body.variant_ref ?? null,
  environment: body.environment_ref ?? null,
});

// Response bodies: the typed shapes of what the routes answer, and the source of the OpenAPI document.

const ReferenceOutput = /* @__PURE__ */ z.object({
  slug: /* @__PURE__ */ z.string(),
  version: /* @__PURE__ */ z.nullable(/* @__PURE__ */ z.int()),
  id: /* @__PURE__ */ z.uuid(),
});

const Lifecycle = /* @__PURE__ */ z.object({
  created_at: /* @__PURE__ */ z.iso.datetime(),
  updated_at: /* @__PURE__ */ z.iso.datetime(),
  updated_by: /* @__PURE__ */ z
    .string()
    .apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "Email of who committed (or deployed)" })),
  updated_by_id: /* @__PURE__ */ z.uuid(),
});

/** A config (the platform's ConfigResponseModel). */
export const ConfigOutput = /* @__PURE__ */ z
  .object({
    params: z.record(z.string(), z.unknown()),
    url: z.string().apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: '"" when none was given' })),
    application_ref: ReferenceOutput.apply(
      /* @__PURE__ */ documented(
        globalThis.DOCUMENTATION && { description: "slug: the app's name; version: null; id: the app's id" },
      ),
    ),
    service_ref: z.null(),
    variant_ref: ReferenceOutput.apply(
      /* @__PURE__ */ documented(
        globalThis.DOCUMENTATION && { description: "slug: the config name; version and id: the variant revision's" },
      ),
    ),
    environment_ref: z.nullable(ReferenceOutput).apply(
      /* @__PURE__ */ documented(
        globalThis.DOCUMENTATION && {
          description: "When reached through an environment: its name, and the environment revision's number and id",
        },
      ),
    ),
    variant_lifecycle: Lifecycle.apply(
      /* @__PURE__ */ documented(
        globalThis.DOCUMENTATION && { description: "When and by whom the variant revision was committed" },
      ),
    ),
    environment_lifecycle: z
      .nullable(Lifecycle)
      .apply(
        /* @__PURE__ */ documented(
          globalThis.DOCUMENTATION && { description: "When and by whom the environment revision was made" },
        ),
      ),
  })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "ConfigOutput"));
export type ConfigOutput = z.infer<typeof ConfigOutput>;

export const toConfigOutput = (config: Config): ConfigOutput => ({
  params: config.params,
  url: config.url,
  application_ref: { slug: config.appName, version: null, id: config.appId },
  service_ref: null,
  variant_ref: { slug: config.configName, version: config.revision, id: config.revisionId },
  environment_ref: config.environment && {
    slug: config.environment.name,
    version: config.environment.revision,
    id: config.environment.revisionId,
  },
  variant_lifecycle: {
    created_at: config.revisionCreatedAt,
    updated_at: config.revisionCreatedAt,
    updated_by: config.revisionModifiedByEmail,
    updated_by_id: config.revisionModifiedById,
  },
  environment_lifecycle: config.environment && {
    created_at: config.environment.createdAt,
    updated_at: config.environment.createdAt,
    updated_by: config.environment.modifiedByEmail,
    updated_by_id: config.environment.modifiedById,
  },
});
