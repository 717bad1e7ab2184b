import * as z from "zod/mini";
import { appIsVisible } from "../apps/apps.sql.ts";
import { type ConfigRefs, configRefOrder, environmentRevisionRefs, fetchConfig } from "../core/configs.sql.ts";
import { BASE_NAME } from "../core/variant-names";
import { appNotFound, configNotFound, protectionRefused } from "../http/core-errors";
import { readAs, writeAs } from "../http/d1-session";
import { dryRunQueryOf } from "../http/dry-run";
import { forbidden } from "../http/errors";
import { settleClaim } from "../http/idempotency";
import {
  DEMO_APP_ID,
  DEMO_CONFIG_PARAMS,
  DEMO_TEMPERATURE,
  EXAMPLE_ENVIRONMENT_REVISION_ID,
  EXAMPLE_VARIANT_REVISION_ID,
  environmentProtectedExample,
  errorResponse,
  PROTECTED,
  responseRef,
  withKeyErrors,
} from "../http/openapi-parts";
import { route, type SharedResponses } from "../http/route";
import { answerSplit, targetingKey } from "../http/targeting-key";
import { MAX_CONFIG_BODY_BYTES } from "../http/validation";
import { parametersAsSent } from "../variants/configs.schemas";
import { configArchived, configNameTaken } from "./errors";
import {
  Base,
  DeploymentRevisionParams,
  GetConfigQuery,
  ListBasesQuery,
  RegistryConfig,
  SaveConfigBody,
  SaveConfigDryRun,
  toRegistryConfig,
} from "./registry.schemas";
import { previewSave, type SaveOutcome, saveConfig } from "./registry.sql.ts";

const BASE_ID = "`base_id` is the app's id: every app has one base, named `app`, whose id is its own.";

/** The demo app's config `main` as production runs it (revision 2), and as production's revision 1 deployed it. */
const demoInProduction = { config_name: "main", current_version: 2, parameters: DEMO_CONFIG_PARAMS } satisfies RegistryConfig;
const demoOfDeployment = { config_name: "main", current_version: 1, parameters: DEMO_CONFIG_PARAMS } satisfies RegistryConfig;

/** What `get_config` names: what the environment runs (it wins when both are given), or the config's latest revision. */
function registryRefs(query: { base_id: string; environment_name?: string; config_name?: string }): ConfigRefs {
  const application = { slug: null, version: null, id: query.base_id };
  return query.environment_name !== undefined
    ? { application, variant: null, environment: { slug: query.environment_name, version: null, id: null } }
    : { application, variant: { slug: query.config_name ?? null, version: null, id: null }, environment: null };
}

/** The error of a save that wrote nothing, or of its dry-run. */
function saveRefusal(outcome: Exclude<SaveOutcome, { outcome: "done" | "key_reused" }>) {
  switch (outcome.outcome) {
    case "not_found":
      return appNotFound();
    case "forbidden":
      return forbidden();
    case "exists":
      return configNameTaken();
    case "archived":
      return configArchived();
    case "refused":
      return protectionRefused(outcome);
  }
}

/** Routes under /configs: the registry as the platform's older SDK reads and saves it. */
export const registryRoutes = [
  route(
    {
      method: "get",
      path: "/configs",
      cached: true,
      targeted: true,
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          { name: "GET /configs by environment", path: "/configs?base_id={appId}&environment_name=production", trips: 1 },
          {
            name: "GET /configs, a split running, with a Targeting-Key",
            path: "/configs?base_id={splitAppId}&environment_name=production",
            headers: { "Targeting-Key": "user-1" },
            trips: 1,
          },
          { name: "GET /configs by name", path: "/configs?base_id={appId}&config_name=main", trips: 1 },
          { name: "GET /configs, nothing deployed", path: "/configs?base_id={appId}&environment_name=qa", status: 404, trips: 1 },
        ],
      },
      auth: "key",
      query: {
        schema: GetConfigQuery,
        examples: globalThis.DOCUMENTATION && {
          base_id: DEMO_APP_ID,
          environment_name: "production",
          config_name: "main",
        },
      },
      doc: globalThis.DOCUMENTATION && {
        operationId: "getConfig",
        tag: "Older SDK",
        summary: "Read the config an environment runs, or a config's latest revision",
        description:
          "What the older SDK reads each time an app starts. With `environment_name`: the config revision that " +
          "environment runs (`current_version` is that config revision's number); else, with `config_name`: that " +
          `config's latest revision. The environment wins when both are given. ${BASE_ID} Any role in the app's ` +
          "organization may read (the platform asked for the right to edit configs). A config, environment or app " +
          "that does not exist or is not visible, or an environment that runs nothing, is a 404 (the platform " +
          "answered 400 or 500).",
        ok: { schema: RegistryConfig, description: "The config", example: demoInProduction },
        errors: {
          404: responseRef("RegistryConfigNotFound"),
        },
      },
    },
    async (c) => {
      const refs = registryRefs(c.req.valid("query"));
      const key = targetingKey(c);
      const config = await readAs(c, configRefOrder(refs), (db) => fetchConfig(db, refs, key));
      if (!config) throw configNotFound();
      answerSplit(c, config);
      return c.json(toRegistryConfig(config, config.revision), 200);
    },
  ),
  route(
    {
      method: "post",
      path: "/configs",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          {
            name: "POST /configs, a new name",
            path: "/configs",
            body: { base_id: "{appId}", config_name: "saved", parameters: { n: 1 }, overwrite: false },
            trips: 1,
          },
          {
            name: "POST /configs, overwrite (commit and deploy)",
            path: "/configs",
            body: { base_id: "{appId}", config_name: "main", parameters: { n: 1 }, overwrite: true },
            trips: 1,
          },
          {
            name: "POST /configs with an Idempotency-Key",
            path: "/configs",
            body: { base_id: "{appId}", config_name: "main", parameters: { n: 1 }, overwrite: true },
            headers: { "Idempotency-Key": "round-trips-save" },
            trips: 1,
          },
          {
            name: "POST /configs, name taken",
            path: "/configs",
            body: { base_id: "{appId}", config_name: "saved", parameters: { n: 1 }, overwrite: false },
            status: 400,
            trips: 1,
          },
        ],
      },
      auth: "key",
      write: true,
      body: {
        schema: SaveConfigBody,
        id: "SaveConfig",
        examples: globalThis.DOCUMENTATION && {
          newConfig: {
            summary: "A new config",
            value: {
              base_id: DEMO_APP_ID,
              config_name: "support",
              parameters: { ...DEMO_CONFIG_PARAMS, prompt: "You answer customer support questions." },
              overwrite: false,
            },
          },
          overwrite: {
            summary: "New parameters for a config, deployed to production",
            value: {
              base_id: DEMO_APP_ID,
              config_name: "main",
              parameters: { ...DEMO_CONFIG_PARAMS, temperature: 0.7 },
              overwrite: true,
            },
          },
        },
        maxBytes: MAX_CONFIG_BODY_BYTES,
      },
      idempotencyKey: "replays",
      protectionBypass: true,
      query: dryRunQueryOf("answer the config revision the save would make and, for an overwrite, its deploy to production"),
      doc: globalThis.DOCUMENTATION && {
        operationId: "saveConfig",
        tag: "Older SDK",
        summary: "Save a config's parameters under its name",
        description:
          "When the app has no config of that name: a new config, whose revision 1 holds `parameters` (not deployed). " +
          "When it has one: with `overwrite` true, or while that config's latest parameters are still `{}`, a new " +
          "revision holding `parameters`, deployed to production at once, as the platform does (both or neither); the " +
          "deployment is a normal entry of production's history (GET /apps/{app_id}/revisions/production), which may " +
          "be reverted like any other. Else 400, and nothing is " +
          `written. ${BASE_ID} Answers null.`,
        ok: {
          schema: z.union([z.null(), SaveConfigDryRun]),
          description:
            "Saved (and deployed to production, when it overwrote a config); with `?dry_run=true`, what it would write",
          examples: {
            saved: { summary: "Saved", value: null },
            dryRun: {
              summary: "?dry_run=true, an overwrite",
              value: {
                dry_run: true,
                app_id: DEMO_APP_ID,
                config_name: "main",
                kind: "save",
                revision: 3,
                deploy: {
                  environment: "production",
                  next_environment_revision: 3,
                  current: {
                    environment_revision: 2,
                    variant_revision_id: EXAMPLE_VARIANT_REVISION_ID,
                    config_name: "main",
                    revision: 2,
                  },
                  diff: {
                    identical: false,
                    coarse: false,
                    patch: [{ op: "replace", path: "/params/temperature", value: 0.7 }],
                    changes: [{ path: "/params/temperature", op: "replace", from: DEMO_TEMPERATURE, to: 0.7 }],
                  },
                },
              },
            },
          },
        },
        errors: {
          400: withKeyErrors(
            400,
            "The app has a config of that name, `overwrite` is false and its latest parameters are not `{}`",
            { configNameTaken: configNameTaken() },
          ),
          404: responseRef("AppNotFound"),
          409: withKeyErrors(
            409,
            `The config of that name is archived: unarchive it first; nothing was written. Or, for a save that would deploy: ${PROTECTED}`,
            { configArchived: configArchived(), environmentProtected: environmentProtectedExample() },
          ),
        },
      },
    },
    async (c) => {
      const { base_id, config_name, overwrite } = c.req.valid("json");
      const save = { appId: base_id, configName: config_name, params: parametersAsSent(await c.req.text()), overwrite };
      if (c.req.valid("query").dry_run) {
        const preview = await writeAs(c, [save.appId], (db) => previewSave(db, save, c.var.bypassReason ?? null));
        if (preview.outcome !== "preview") throw saveRefusal(preview);
        const { revision, deploy } = preview;
        return c.json({ dry_run: true, app_id: base_id, config_name, kind: "save", revision, deploy } as const, 200);
      }
      const saved = await writeAs(c, [save.appId], (db) => saveConfig(db, save, c.var.claim, c.var.bypassReason ?? null));
      settleClaim(c, saved);
      if (saved.outcome !== "done" && saved.outcome !== "key_reused") throw saveRefusal(saved);
      return c.json(null, 200);
    },
  ),
  route(
    {
      method: "get",
      path: "/configs/deployment/{deployment_revision_id}",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [{ name: "GET /configs/deployment/{id}", path: "/configs/deployment/{firstRevisionId}", trips: 1 }],
      },
      auth: "key",
      params: {
        schema: DeploymentRevisionParams,
        examples: globalThis.DOCUMENTATION && { deployment_revision_id: EXAMPLE_ENVIRONMENT_REVISION_ID },
      },
      doc: globalThis.DOCUMENTATION && {
        operationId: "getConfigDeploymentRevision",
        tag: "Older SDK",
        summary: "Read the config an environment revision deployed",
        description:
          "The id is one of `revisions[].id` of GET /apps/{app_id}/revisions/{environment_name}. `current_version` is " +
          "that environment revision's number, as on the platform; `config_name` and `parameters` are those of the " +
          "config revision it deployed, also when that variant has been removed since.",
        ok: { schema: RegistryConfig, description: "The config that environment revision deployed", example: demoOfDeployment },
        errors: { 404: responseRef("DeployedConfigNotFound") },
      },
    },
    async (c) => {
      const refs = environmentRevisionRefs(c.req.valid("param").deployment_revision_id);
      const config = await readAs(c, configRefOrder(refs), (db) => fetchConfig(db, refs));
      if (!config?.environment) throw configNotFound();
      return c.json(toRegistryConfig(config, config.environment.revision), 200);
    },
  ),
];

/** Routes under /bases: an app's one implicit base. */
export const basesRoutes = [
  route(
    {
      method: "get",
      path: "/bases",
      roundTrips: globalThis.ROUTE_FACTS && { cases: [{ name: "GET /bases", path: "/bases?app_id={appId}", trips: 1 }] },
      auth: "key",
      query: { schema: ListBasesQuery, examples: globalThis.DOCUMENTATION && { app_id: DEMO_APP_ID, base_name: "app" } },
      doc: globalThis.DOCUMENTATION && {
        operationId: "listBases",
        tag: "Older SDK",
        summary: "List an app's bases",
        description:
          "Every app has exactly one base, named `app`, whose `base_id` is the app's id: the list holds it, or nothing " +
          "when `base_name` names another.",
        ok: {
          schema: z.array(Base),
          description: "The app's base, or none",
          example: [{ base_id: DEMO_APP_ID, base_name: "app" }] satisfies Base[],
        },
        errors: { 404: responseRef("AppNotFound") },
      },
    },
    async (c) => {
      const { app_id, base_name } = c.req.valid("query");
      if (!(await readAs(c, [app_id], (db) => appIsVisible(db, app_id)))) throw appNotFound();
      const bases: Base[] = base_name === undefined || base_name === BASE_NAME ? [{ base_id: app_id, base_name: BASE_NAME }] : [];
      return c.json(bases, 200);
    },
  ),
];

/** The responses the routes above share in the document. */
export const registryResponses = (): SharedResponses => ({
  RegistryConfigNotFound: errorResponse(
    "No such app, config or environment visible to the caller, or nothing deployed to the environment (not told apart)",
    configNotFound(),
  ),
  DeployedConfigNotFound: errorResponse(
    "No environment revision of that id visible to the caller (not told apart)",
    configNotFound(),
  ),
});
