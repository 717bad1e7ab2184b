import * as z from "zod/mini";
import type { Config, ConfigRefs } from "../core/configs.sql.ts";
import { type CurrentRef, currentRef, wrappedIn } from "../http/current-api";
import { documented, schemaName } from "../http/documentation";
import { commitMessage, httpUrlOrEmpty, jsonObject, MAX_JSON_DEPTH, nameField, uuid } from "../http/fields";
import { bodyAsSent } from "../variants/configs.schemas";

/** The suffix of a retrieve's `key` after the app's name: the SDK sends "<app name>.revision". */
const KEY_SUFFIX = ".revision";

/** What a retrieve names, in the names of the API it came through (applications, or workflows). */
const retrieveShape = (names: { artifact: string; variant: string; revision: string }) =>
  z.object({
    resolve: z
      .nullish(z.boolean())
      .apply(documented(globalThis.DOCUMENTATION && { description: "Ignored: references are always resolved" })),
    [names.artifact]: currentRef("The app's name"),
    [names.variant]: currentRef("The variant's name (config name)").apply(
      documented(globalThis.DOCUMENTATION && { description: "`id`: the variant's id" }),
    ),
    [names.revision]: currentRef("Ignored: a revision is named by `id` or `version`").apply(
      documented(
        globalThis.DOCUMENTATION && { description: "`version`: the variant's revision number (none: the latest); or `id`" },
      ),
    ),
    environment_ref: currentRef("The environment's name").apply(
      documented(
        globalThis.DOCUMENTATION && {
          description:
            "What an environment runs for the app `key` names: `version` is that app's environment revision (none: " +
            "the current one); `id`, when given, must be the environment's (POST /simple/environments/query)",
        },
      ),
    ),
    key: z
      .nullish(nameField("key", { nfc: true }))
      .apply(documented(globalThis.DOCUMENTATION && { description: 'With `environment_ref`: "<app name>.revision"' })),
  });

/**
 * A retrieve's lookup: a variant revision (by variant or revision id), an app's alone (its oldest variant's, at its
 * latest or at a version), or what an app's environment runs.
 */
export type RevisionLookup =
  | { by: "variant" | "app"; refs: ConfigRefs }
  | { by: "environment"; refs: ConfigRefs; environmentId: string | null };

type RetrieveInput = Record<string, CurrentRef | null | boolean | string | undefined>;

/** The lookup of a valid retrieve body, or the problem that makes it unanswerable (a 422's message and where). */
function lookupOf(
  body: RetrieveInput,
  names: { artifact: string; variant: string; revision: string },
): RevisionLookup | { problem: string; at: string } {
  const artifact = (body[names.artifact] as CurrentRef | null | undefined) ?? null;
  const variant = (body[names.variant] as CurrentRef | null | undefined) ?? null;
  const revision = (body[names.revision] as CurrentRef | null | undefined) ?? null;
  const environment = (body.environment_ref as CurrentRef | null | undefined) ?? null;
  const application = artifact && { slug: artifact.slug, id: artifact.id, version: null };
  if (environment) {
    if (environment.slug === null) return { problem: "environment_ref needs a slug", at: "environment_ref" };
    const key = typeof body.key === "string" ? body.key : null;
    if (key !== null && !(key.endsWith(KEY_SUFFIX) && key.length > KEY_SUFFIX.length)) {
      return { problem: `key must be "<app name>${KEY_SUFFIX}"`, at: "key" };
    }
    const named =
      key === null ? application : { slug: key.slice(0, -KEY_SUFFIX.length), id: artifact?.id ?? null, version: null };
    if (!named) return { problem: `environment_ref needs key ("<app name>${KEY_SUFFIX}") or ${names.artifact}`, at: "key" };
    return {
      by: "environment",
      refs: {
        application: named,
        variant: null,
        environment: { slug: environment.slug, version: environment.version, id: null },
      },
      environmentId: environment.id,
    };
  }
  if (!artifact && variant?.id == null && revision?.id == null) {
    return { problem: `${names.artifact}, ${names.variant}.id or ${names.revision}.id is required`, at: names.artifact };
  }
  return {
    by: variant?.id == null && variant?.slug == null && revision?.id == null ? "app" : "variant",
    refs: {
      application,
      // Always a ref (variant mode), even empty: an app ref alone means its oldest variant, at its latest revision.
      variant: { slug: variant?.slug ?? null, version: revision?.version ?? null, id: revision?.id ?? null },
      variantId: variant?.id ?? null,
      environment: null,
    },
  };
}

/** A retrieve body as an API names it: validated, then turned into its lookup. */
const retrieveBody = (names: { artifact: string; variant: string; revision: string }) =>
  z.pipe(
    retrieveShape(names),
    z.transform((body, context): RevisionLookup => {
      const lookup = lookupOf(body as RetrieveInput, names);
      if ("problem" in lookup) {
        context.issues.push({ code: "custom", path: [lookup.at], message: lookup.problem, input: context.value });
        return z.NEVER;
      }
      return lookup;
    }),
  );

export const APPLICATION_NAMES = {
  artifact: "application_ref",
  variant: "application_variant_ref",
  revision: "application_revision_ref",
} as const;
export const WORKFLOW_NAMES = {
  artifact: "workflow_ref",
  variant: "workflow_variant_ref",
  revision: "workflow_revision_ref",
} as const;

export const RetrieveRevisionBody = /* @__PURE__ */ retrieveBody(APPLICATION_NAMES);
export const RetrieveRevisionShape = /* @__PURE__ */ retrieveShape(APPLICATION_NAMES);
export const RetrieveWorkflowRevisionBody = /* @__PURE__ */ retrieveBody(WORKFLOW_NAMES);
export const RetrieveWorkflowRevisionShape = /* @__PURE__ */ retrieveShape(WORKFLOW_NAMES);

/**
 * The keys a revision's `data` may have; any other is refused (nothing is silently dropped), `uri` too: the platform
 * keeps a service URI, which this service has no place for.
 */
const DATA_KEYS = ["parameters", "url"];

const RevisionDataShape = /* @__PURE__ */ z.object({
  parameters: jsonObject("parameters").apply(
    /* @__PURE__ */ documented(
      globalThis.DOCUMENTATION && {
        description: `The revision's params: they replace the latest's (no merge); at most ${MAX_JSON_DEPTH} levels deep`,
      },
    ),
  ),
  url: z
    .nullish(httpUrlOrEmpty("url"))
    .apply(
      /* @__PURE__ */ documented(
        globalThis.DOCUMENTATION && { description: "Replaces the url; omitted or null: the latest's is kept" },
      ),
    ),
});

/**
 * `data`, its keys checked as sent (a parsed copy would have lost a `__proto__` key on the way); documented as its
 * shape (a preprocess is, where a pipe would be documented as its input).
 */
const RevisionData = /* @__PURE__ */ z.pipe(
  z.transform((data, context) => {
    if (typeof data !== "object" || data === null) return data;
    for (const key of Object.keys(data)) {
      if (!DATA_KEYS.includes(key)) {
        context.issues.push({
          code: "custom",
          path: [key],
          message: `data takes only ${DATA_KEYS.join(", ")}; "${key}" is refused`,
          input: context.value,
        });
      }
    }
    return data;
  }),
  RevisionDataShape,
);

/** The platform's slug rule, which a commit's own revision slug follows. */
const SLUG = /^[A-Za-z0-9_-][A-Za-z0-9_.-]*$/;

export const CommitRevision = /* @__PURE__ */ z.object({
  application_id: z
    .nullish(uuid)
    .apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "The app (when given, the variant's own)" })),
  application_variant_id: uuid,
  slug: z
    .nullish(z.string().check(z.maxLength(64), z.regex(SLUG, "slug must match ^[A-Za-z0-9_-][A-Za-z0-9_.-]*$")))
    .apply(
      /* @__PURE__ */ documented(
        globalThis.DOCUMENTATION && { description: "The revision's slug, unique in the project; none: 12 hex digits are made" },
      ),
    ),
  data: RevisionData,
  message: z
    .nullish(commitMessage("message"))
    .apply(
      /* @__PURE__ */ documented(
        globalThis.DOCUMENTATION && { description: "The commit message, shown by both APIs' revision reads" },
      ),
    ),
});
export const CommitRevisionShape = /* @__PURE__ */ z.object({ application_revision: CommitRevision });
export const CommitRevisionBody = /* @__PURE__ */ wrappedIn("application_revision", CommitRevisionShape);

export const LogRevisionsShape = /* @__PURE__ */ z.object({
  application_revisions: z.object({
    application_id: z.nullish(uuid),
    application_variant_id: uuid,
  }),
  windowing: z.nullish(
    z.object({
      limit: z.nullish(z.int().check(z.gte(1), z.lte(1000))),
      next: z
        .nullish(uuid)
        .apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "The cursor an earlier page answered" })),
    }),
  ),
});
export const LogRevisionsBody = /* @__PURE__ */ wrappedIn("application_revisions", LogRevisionsShape);

/** A deploy body; the refs it must have are checked by the route (400, as the platform answers). */
export const DeployRevisionBody = /* @__PURE__ */ z.object({
  application_ref: currentRef("The app's name"),
  application_variant_ref: currentRef("The variant's name (config name)").apply(
    /* @__PURE__ */ documented(
      globalThis.DOCUMENTATION && { description: "`id`: the variant's id; none: the app's oldest variant" },
    ),
  ),
  application_revision_ref: currentRef("Ignored").apply(
    /* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "`version` (none: the latest) or `id`" }),
  ),
  environment_ref: currentRef("The environment's name"),
});

/** The parameters of a valid commit body's text, every number as sent (see configs.schemas.ts `parametersAsSent`). */
export const committedParameters = (text: string) =>
  (bodyAsSent(text) as { application_revision: { data: { parameters: Record<string, unknown> } } }).application_revision.data
    .parameters;

// Response bodies.

const RevisionDataOutput = /* @__PURE__ */ z.object({
  parameters: /* @__PURE__ */ z.record(/* @__PURE__ */ z.string(), /* @__PURE__ */ z.unknown()),
  url: /* @__PURE__ */ z.string(),
});

const revisionFields = {
  id: /* @__PURE__ */ z.uuid(),
  slug: /* @__PURE__ */ z.string(),
  version: /* @__PURE__ */ z
    .string()
    .apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "The revision number, as a string" })),
  message: /* @__PURE__ */ z
    .optional(/* @__PURE__ */ z.string())
    .apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "Left out when none" })),
  data: RevisionDataOutput,
  variant_id: /* @__PURE__ */ z.uuid(),
  variant_slug: /* @__PURE__ */ z.string(),
  artifact_id: /* @__PURE__ */ z.uuid(),
  artifact_slug: /* @__PURE__ */ z.string(),
  created_at: /* @__PURE__ */ z.iso.datetime(),
  created_by_id: /* @__PURE__ */ z.uuid(),
  updated_by: /* @__PURE__ */ z
    .string()
    .apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "The author's email" })),
  updated_by_id: /* @__PURE__ */ z.uuid(),
};

/** An application revision: a variant revision of an app, in the current API's names. */
export const Revision = /* @__PURE__ */ z
  .object({
    ...revisionFields,
    application_id: z.uuid(),
    application_slug: z.string(),
    application_variant_id: z.uuid(),
    application_variant_slug: z.string(),
  })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "Revision"));
export type Revision = z.infer<typeof Revision>;

/** The same revision, as a workflow revision. */
export const WorkflowRevision = /* @__PURE__ */ z
  .object({
    ...revisionFields,
    workflow_id: z.uuid(),
    workflow_slug: z.string(),
    workflow_variant_id: z.uuid(),
    workflow_variant_slug: z.string(),
  })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "WorkflowRevision"));
export type WorkflowRevision = z.infer<typeof WorkflowRevision>;

export const RevisionAnswer = /* @__PURE__ */ z
  .object({ count: z.literal([0, 1]), application_revision: z.optional(Revision) })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "RevisionAnswer"));
export const WorkflowRevisionAnswer = /* @__PURE__ */ z
  .object({ count: z.literal([0, 1]), workflow_revision: z.optional(WorkflowRevision) })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "WorkflowRevisionAnswer"));
export const RevisionsAnswer = /* @__PURE__ */ z
  .object({
    count: z.int(),
    application_revisions: z.array(Revision),
    windowing: z
      .optional(z.object({ limit: z.int(), next: z.uuid() }))
      .apply(
        /* @__PURE__ */ documented(
          globalThis.DOCUMENTATION && { description: "When more follow: send it back to read the next page" },
        ),
      ),
  })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "RevisionsAnswer"));

/** The detail of the 409 of a slug taken in the project, in the platform's shape. */
export const SlugConflict = /* @__PURE__ */ z
  .object({
    detail: /* @__PURE__ */ z.object({
      message: /* @__PURE__ */ z.string(),
      conflict: /* @__PURE__ */ z.object({ slug: /* @__PURE__ */ z.string() }),
    }),
  })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "SlugConflict"));

/** What both shapes of a revision share, from the config. */
const common = (config: Config) => ({
  id: config.revisionId,
  slug: config.revisionSlug,
  version: String(config.revision),
  ...(config.message === null ? {} : { message: config.message }),
  data: { parameters: config.params, url: config.url },
  variant_id: config.variantId,
  variant_slug: config.configName,
  artifact_id: config.appId,
  artifact_slug: config.appName,
  created_at: config.revisionCreatedAt,
  created_by_id: config.revisionModifiedById,
  updated_by: config.revisionModifiedByEmail,
  updated_by_id: config.revisionModifiedById,
});

export const toRevision = (config: Config): Revision => ({
  ...common(config),
  application_id: config.appId,
  application_slug: config.appName,
  application_variant_id: config.variantId,
  application_variant_slug: config.configName,
});

export const toWorkflowRevision = (config: Config): WorkflowRevision => ({
  ...common(config),
  workflow_id: config.appId,
  workflow_slug: config.appName,
  workflow_variant_id: config.variantId,
  workflow_variant_slug: config.configName,
});
