import type { Context } from "hono";
import type * as z from "zod/mini";
import { addConfig, type ConfigWrite, commitConfig, configRefOrder, fetchConfig, forkConfig } from "../core/configs.sql.ts";
import { configNotFound } from "../http/core-errors";
import { readAs, writeAs } from "../http/d1-session";
import { forbidden, payloadTooLarge } from "../http/errors";
import { settleClaim } from "../http/idempotency";
import {
  DEMO_APP_ID,
  DEMO_CONFIG_PARAMS,
  DEMO_USER_ID,
  EXAMPLE_ENVIRONMENT_REVISION_ID,
  EXAMPLE_VARIANT_REVISION_ID,
  errorResponse,
  type RequestExamples,
  responseRef,
  schemaRef,
  withKeyErrors,
} from "../http/openapi-parts";
import { route, type SharedResponses } from "../http/route";
import { answerSplit, targetingKey } from "../http/targeting-key";
import { MAX_CONFIG_BODY_BYTES } from "../http/validation";
import {
  AddConfigBody,
  CommitConfigBody,
  ConfigOutput,
  FetchConfigBody,
  paramsAsSent,
  toConfigOutput,
  toConfigRefs,
} from "./configs.schemas";
import { configExists, staleConfig } from "./errors";

// The flat commit body: CommitConfigBody unwraps `{"config": {...}}` before validating with it.
const CommitConfig = CommitConfigBody.def.out;

const demoApp = { slug: "demo-app" };
const lifecycle = {
  created_at: "2026-11-22T02:54:51.236Z",
  updated_at: "2026-11-22T02:54:51.236Z",
  updated_by: "demo@example.com",
  updated_by_id: DEMO_USER_ID,
};

const demoConfig = {
  params: DEMO_CONFIG_PARAMS,
  url: "",
  application_ref: { slug: "demo-app", version: null, id: DEMO_APP_ID },
  service_ref: null,
  variant_ref: { slug: "main", version: 2, id: EXAMPLE_VARIANT_REVISION_ID },
  environment_ref: null,
  variant_lifecycle: lifecycle,
  environment_lifecycle: null,
} satisfies ConfigOutput;

/** The demo config at another revision, holding these params. */
const demoConfigAt = (version: number, params: Record<string, unknown>): ConfigOutput => ({
  ...demoConfig,
  params,
  variant_ref: { ...demoConfig.variant_ref, version },
});

/** The demo config as an environment serves it, at that environment's revision. */
export const demoConfigIn = (environment: string, revision: number): ConfigOutput => ({
  ...demoConfig,
  environment_ref: { slug: environment, version: revision, id: EXAMPLE_ENVIRONMENT_REVISION_ID },
  environment_lifecycle: lifecycle,
});

const fetchExamples = {
  latestOfVariant: {
    summary: "The latest revision of a config",
    value: { application_ref: demoApp, variant_ref: { slug: "main" } },
  },
  variantRevision: {
    summary: "A revision of a config",
    value: { application_ref: demoApp, variant_ref: { slug: "main", version: 1 } },
  },
  deployed: {
    summary: "What an environment has deployed",
    value: { application_ref: demoApp, environment_ref: { slug: "production" } },
  },
  production: { summary: "What the app's production environment has deployed", value: { application_ref: demoApp } },
} satisfies RequestExamples<z.input<typeof FetchConfigBody>>;

const commit = {
  params: { ...DEMO_CONFIG_PARAMS, temperature: 0.7 },
  application_ref: demoApp,
  variant_ref: { slug: "main", version: 2 },
} satisfies z.input<typeof CommitConfig>;

/** The config a write made (or, replaying a retry, had made), or the error that says why it made none. */
function madeConfig<E extends { Bindings: Env }>(c: Context<E>, write: ConfigWrite): ConfigOutput {
  settleClaim(c, write);
  switch (write.outcome) {
    case "done":
      return toConfigOutput(write.config);
    case "exists":
      throw configExists();
    case "forbidden":
      throw forbidden();
    case "stale":
      throw staleConfig(write.latest);
    default:
      throw configNotFound();
  }
}

/** Routes under /variants/configs: the platform's config registry. */
export const configsRoutes = [
  // A read: it accepts an Idempotency-Key, as every POST does, but has nothing to replay.
  route(
    {
      method: "post",
      path: "/variants/configs/fetch",
      cached: true,
      targeted: true,
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          {
            name: "configs/fetch by variant",
            path: "/variants/configs/fetch",
            body: { application_ref: { id: "{appId}" }, variant_ref: { slug: "main" } },
            trips: 1,
          },
          {
            name: "configs/fetch by environment",
            path: "/variants/configs/fetch",
            body: { application_ref: { slug: "counted" }, environment_ref: { slug: "production" } },
            trips: 1,
          },
          {
            name: "configs/fetch, a split running, with a Targeting-Key",
            path: "/variants/configs/fetch",
            body: { application_ref: { id: "{splitAppId}" }, environment_ref: { slug: "production" } },
            headers: { "Targeting-Key": "user-1" },
            trips: 1,
          },
          {
            name: "configs/fetch, If-None-Match: * (304, no body)",
            path: "/variants/configs/fetch",
            body: { application_ref: { id: "{appId}" }, variant_ref: { slug: "main" } },
            headers: { "If-None-Match": "*" },
            status: 304,
            trips: 1,
          },
          {
            name: "configs/fetch, nothing there",
            path: "/variants/configs/fetch",
            body: { application_ref: { id: "{appId}" }, variant_ref: { slug: "absent" } },
            status: 404,
            trips: 1,
          },
        ],
      },
      auth: "key",
      body: { schema: FetchConfigBody, id: "FetchConfig", examples: globalThis.DOCUMENTATION && fetchExamples },
      idempotencyKey: "validates",
      doc: globalThis.DOCUMENTATION && {
        operationId: "fetchConfig",
        tag: "Configs",
        summary: "Read a config",
        description:
          "A `variant_ref` wins (its `version`, else the latest; or its revision `id`); else an `environment_ref` (its " +
          "`version`, else the current revision; or its revision `id`); neither, with an `application_ref`: the app's " +
          "production environment. Reached through an environment, `environment_ref` and `environment_lifecycle` are set.",
        ok: { schema: ConfigOutput, description: "The config", example: demoConfigIn("production", 1) },
        errors: { 404: responseRef("ConfigNotFound") },
      },
    },
    async (c) => {
      const refs = toConfigRefs(c.req.valid("json"));
      const key = targetingKey(c);
      const config = await readAs(c, configRefOrder(refs), (db) => fetchConfig(db, refs, key));
      if (!config) throw configNotFound();
      answerSplit(c, config);
      return c.json(toConfigOutput(config), 200);
    },
  ),
  route(
    {
      method: "post",
      path: "/variants/configs/add",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          {
            name: "configs/add",
            path: "/variants/configs/add",
            body: { application_ref: { id: "{appId}" }, variant_ref: { slug: "added" } },
            trips: 1,
          },
          {
            name: "configs/add, existing",
            path: "/variants/configs/add",
            body: { application_ref: { id: "{appId}" }, variant_ref: { slug: "main" } },
            status: 400,
            trips: 1,
          },
        ],
      },
      auth: "key",
      write: true,
      body: {
        schema: AddConfigBody,
        id: "AddConfig",
        examples: globalThis.DOCUMENTATION && {
          byAppName: {
            summary: "To an app of the key's project",
            value: { application_ref: demoApp, variant_ref: { slug: "experiment" } },
          },
        },
      },
      idempotencyKey: "replays",
      doc: globalThis.DOCUMENTATION && {
        operationId: "addConfig",
        tag: "Configs",
        summary: "Add a config (a variant) to an app",
        description:
          'Its revision 1 holds params `{}` and url `""`. `application_ref` is required: an app named by `slug` is looked ' +
          "up in the key's project, by `id` among the apps the caller can see.",
        ok: { schema: ConfigOutput, description: "The new config, at revision 1", example: demoConfigAt(1, {}) },
        errors: {
          400: withKeyErrors(400, "The app already has a config of that name", { configExists: configExists() }),
          404: responseRef("ConfigNotFound"),
        },
      },
    },
    async (c) => {
      const { variant_ref, application_ref } = c.req.valid("json");
      const placedBy = configRefOrder({ application: application_ref });
      const write = await writeAs(c, placedBy, (db) => addConfig(db, application_ref, variant_ref.slug, c.var.claim));
      return c.json(madeConfig(c, write), 200);
    },
  ),
  route(
    {
      method: "post",
      path: "/variants/configs/commit",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          {
            name: "configs/commit",
            path: "/variants/configs/commit",
            body: { application_ref: { id: "{appId}" }, variant_ref: { slug: "main" }, params: { a: 1 } },
            trips: 1,
          },
          {
            name: "configs/commit, stale version",
            path: "/variants/configs/commit",
            body: { application_ref: { id: "{appId}" }, variant_ref: { slug: "main", version: 1 }, params: {} },
            status: 409,
            trips: 1,
          },
          {
            name: "configs/commit by a viewer",
            path: "/variants/configs/commit",
            key: "viewer",
            body: { application_ref: { id: "{teamAppId}" }, variant_ref: { slug: "main" }, params: {} },
            status: 403,
            trips: 1,
          },
        ],
      },
      auth: "key",
      write: true,
      body: {
        schema: CommitConfigBody,
        id: "CommitConfig",
        component: CommitConfig,
        examples: globalThis.DOCUMENTATION && {
          flat: { summary: "On top of revision 2", value: commit },
          wrapped: { summary: "The same, wrapped", value: { config: commit } },
        },
        maxBytes: MAX_CONFIG_BODY_BYTES,
        documentedAs: globalThis.DOCUMENTATION && {
          oneOf: [
            schemaRef("CommitConfig"),
            {
              type: "object",
              description: "The same, wrapped (as later clients send it); a body with `params` is read flat",
              properties: { config: schemaRef("CommitConfig") },
              required: ["config"],
              not: { required: ["params"] },
            },
          ],
        },
      },
      idempotencyKey: "replays",
      doc: globalThis.DOCUMENTATION && {
        operationId: "commitConfig",
        tag: "Configs",
        summary: "Commit a new revision of a config",
        description:
          "`params` replace the latest revision's (no merge); `url` too when given. `variant_ref` is required; when it " +
          "names a `version` (or a revision `id`), that must be the latest revision, else 409. The body may also come " +
          'wrapped, as `{"config": {...}}`.',
        ok: { schema: ConfigOutput, description: "The config at its new revision", example: demoConfigAt(3, commit.params) },
        errors: {
          404: responseRef("ConfigNotFound"),
          409: withKeyErrors(
            409,
            "The version committed on is not the latest revision (the detail names the latest): fetch it and commit on top of it",
            { configChanged: staleConfig(2) },
          ),
        },
      },
    },
    async (c) => {
      const body = c.req.valid("json");
      const refs = { application: body.application_ref, variant: body.variant_ref };
      const change = { params: paramsAsSent(await c.req.text()), url: body.url ?? null, message: body.variant_ref.message };
      const write = await writeAs(c, configRefOrder(refs), (db) => commitConfig(db, refs, change, c.var.claim));
      return c.json(madeConfig(c, write), 200);
    },
  ),
  route(
    {
      method: "post",
      path: "/variants/configs/fork",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          {
            name: "configs/fork",
            path: "/variants/configs/fork",
            body: { application_ref: { id: "{appId}" }, variant_ref: { slug: "main" } },
            trips: 1,
          },
        ],
      },
      auth: "key",
      write: true,
      body: { schema: FetchConfigBody, id: "FetchConfig", examples: globalThis.DOCUMENTATION && fetchExamples },
      idempotencyKey: "replays",
      doc: globalThis.DOCUMENTATION && {
        operationId: "forkConfig",
        tag: "Configs",
        summary: "Fork a config into a new one of the same app",
        description:
          "The config is found as by fetch; the new one, `<config_name>_<8 hex digits>`, has a revision 1 holding its params and url.",
        ok: {
          schema: ConfigOutput,
          description: "The new config, at revision 1",
          example: {
            ...demoConfig,
            variant_ref: { slug: "main_3f9a0c12", version: 1, id: "01a2012d-9d02-7c4e-9a51-0b7f3e2d6c18" },
          },
        },
        errors: { 404: responseRef("ConfigNotFound") },
      },
    },
    async (c) => {
      const refs = toConfigRefs(c.req.valid("json"));
      const write = await writeAs(c, configRefOrder(refs), (db) => forkConfig(db, refs, c.var.claim));
      return c.json(madeConfig(c, write), 200);
    },
  ),
];

/** The responses the routes above share in the document. */
export const configsResponses = (): SharedResponses => ({
  ConfigNotFound: errorResponse(
    "No such app, config, revision or environment visible to the caller, or the refs disagree (not told apart)",
    configNotFound(),
  ),
  ConfigPayloadTooLarge: errorResponse(
    `Request body over ${MAX_CONFIG_BODY_BYTES} bytes`,
    payloadTooLarge(MAX_CONFIG_BODY_BYTES),
  ),
});
