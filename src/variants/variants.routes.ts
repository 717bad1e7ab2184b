import * as z from "zod/mini";
import { addConfig, commitConfig, configRefOrder } from "../core/configs.sql.ts";
import { appEnvironmentNotFound, appNotFound, variantNotFound } from "../http/core-errors";
import { readAs, writeAs } from "../http/d1-session";
import { dryRunQueryOf } from "../http/dry-run";
import { forbidden } from "../http/errors";
import { AppParams } from "../http/fields";
import { settleClaim } from "../http/idempotency";
import {
  DEMO_APP_ID,
  DEMO_CONFIG_PARAMS,
  DEMO_PROJECT_ID,
  DEMO_TEMPERATURE,
  DEMO_USER_ID,
  EXAMPLE_VARIANT_ID,
  EXAMPLE_VARIANT_REVISION_ID,
  errorResponse,
  responseRef,
  withKeyErrors,
} from "../http/openapi-parts";
import { pagedJson } from "../http/paged-json";
import { route, type SharedResponses } from "../http/route";
import { MAX_CONFIG_BODY_BYTES } from "../http/validation";
import { parametersAsSent } from "./configs.schemas";
import { configExists, nothingDeployed, variantRevisionNotFound, variantStillDeployed } from "./errors";
import {
  AddVariantFromBaseBody,
  AppVariant,
  AppVariantRevision,
  configAsAppVariant,
  RemoveVariantDryRun,
  toAppVariant,
  toAppVariantRevision,
  UpdateVariantParametersBody,
  VariantByEnvironmentQuery,
  VariantParams,
  VariantRevisionParams,
} from "./variants.schemas";
import {
  getVariant,
  getVariantDeployedTo,
  getVariantRevision,
  listAppVariants,
  listVariantRevisions,
  previewVariantRemoval,
  removeVariant,
  VARIANT_REVISIONS_PAGE_ROWS,
} from "./variants.sql.ts";

const demoVariant = {
  app_id: DEMO_APP_ID,
  app_name: "demo-app",
  variant_id: EXAMPLE_VARIANT_ID,
  variant_name: "app.main",
  project_id: DEMO_PROJECT_ID,
  base_name: "app",
  base_id: DEMO_APP_ID,
  config_name: "main",
  revision: 2,
  parameters: DEMO_CONFIG_PARAMS,
  uri: null,
  created_at: "2026-11-22T02:54:51.201Z",
  updated_at: "2026-11-22T02:54:51.236Z",
  modified_by_id: DEMO_USER_ID,
} satisfies AppVariant;

const demoRevision = {
  id: EXAMPLE_VARIANT_REVISION_ID,
  revision: 2,
  modified_by: "demo",
  config: { config_name: "main", parameters: DEMO_CONFIG_PARAMS },
  created_at: "2026-11-22T02:54:51.236Z",
  commit_message: "Lower the temperature",
} satisfies AppVariantRevision;

const REMOVED =
  "A removed variant (DELETE /variants/{variant_id}) answers 404 here. Its revisions stay readable by their ids: " +
  "POST /variants/configs/fetch with `variant_ref.id`, and GET /configs/deployment/{deployment_revision_id} for " +
  "what an environment deployed.";

/** The parameters of a new config, as the example of POST /variants/from-base makes it. */
// Written whole, not spread from DEMO_CONFIG_PARAMS: esbuild would keep an unused example that spreads another.
const supportParams = { model: "gpt-4o-mini", temperature: DEMO_TEMPERATURE, prompt: "You answer customer support questions." };

/** The path parameter of the /variants/{variant_id} routes below, with its documented example. */
const variantPath = { schema: VariantParams, examples: globalThis.DOCUMENTATION && { variant_id: EXAMPLE_VARIANT_ID } };

/** Routes under /apps that read an app's variants. */
export const appVariantsRoutes = [
  route(
    {
      method: "get",
      path: "/apps/get_variant_by_env",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          { name: "GET get_variant_by_env", path: "/apps/get_variant_by_env?app_id={appId}&environment=production", trips: 1 },
        ],
      },
      auth: "key",
      query: {
        schema: VariantByEnvironmentQuery,
        examples: globalThis.DOCUMENTATION && { app_id: DEMO_APP_ID, environment: "production" },
      },
      doc: globalThis.DOCUMENTATION && {
        operationId: "getVariantByEnv",
        tag: "Variants",
        summary: "Read the variant deployed to an app's environment",
        description:
          "The variant whose revision the environment runs, as GET /variants/{variant_id} reads it: with its latest " +
          "revision, which may be newer than the one deployed.",
        ok: { schema: AppVariant, description: "The deployed variant", example: demoVariant },
        errors: {
          404: responseRef("NoVariantDeployed"),
        },
      },
    },
    async (c) => {
      const { app_id, environment } = c.req.valid("query");
      const found = await readAs(c, [app_id], (db) => getVariantDeployedTo(db, app_id, environment));
      if (!found.environmentFound) throw appEnvironmentNotFound();
      if (!found.variant) throw nothingDeployed();
      return c.json(toAppVariant(found.variant), 200);
    },
  ),
  route(
    {
      method: "get",
      path: "/apps/{app_id}/variants",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [{ name: "GET an app's variants", path: "/apps/{appId}/variants", trips: 1 }],
      },
      auth: "key",
      params: { schema: AppParams, examples: globalThis.DOCUMENTATION && { app_id: DEMO_APP_ID } },
      doc: globalThis.DOCUMENTATION && {
        operationId: "listAppVariants",
        tag: "Variants",
        summary: "List an app's variants, each with its latest revision",
        description: "Oldest first; removed variants are left out.",
        ok: { schema: z.array(AppVariant), description: "The app's variants, oldest first", example: [demoVariant] },
        errors: { 404: responseRef("AppNotFound") },
      },
    },
    async (c) => {
      const { app_id } = c.req.valid("param");
      const variants = await readAs(c, [app_id], (db) => listAppVariants(db, app_id));
      if (!variants) throw appNotFound();
      return c.json(variants.map(toAppVariant), 200);
    },
  ),
];

/** Routes under /variants: one variant and its revisions; the older SDK's variant writes. */
export const variantsRoutes = [
  route(
    {
      method: "post",
      path: "/variants/from-base",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          {
            name: "POST /variants/from-base",
            path: "/variants/from-base",
            body: { base_id: "{appId}", new_variant_name: "v", new_config_name: "based", parameters: { n: 1 } },
            trips: 1,
          },
        ],
      },
      auth: "key",
      write: true,
      body: {
        schema: AddVariantFromBaseBody,
        id: "AddVariantFromBase",
        examples: globalThis.DOCUMENTATION && {
          newConfig: {
            summary: "A new config of the app",
            value: {
              base_id: DEMO_APP_ID,
              new_variant_name: "app.support",
              new_config_name: "support",
              parameters: supportParams,
            },
          },
        },
        maxBytes: MAX_CONFIG_BODY_BYTES,
      },
      idempotencyKey: "replays",
      doc: globalThis.DOCUMENTATION && {
        operationId: "addVariantFromBase",
        tag: "Variants",
        summary: "Add a config to an app, with its first parameters",
        description:
          "A new config named `new_config_name`, whose revision 1 holds `parameters`; answers its variant. `base_id` " +
          "is the app's id: every app has one base, named `app`, whose id is its own. `new_variant_name` is accepted " +
          "and ignored: a variant is always named `app.<config name>`.",
        ok: {
          schema: AppVariant,
          description: "The new config's variant, at revision 1",
          example: {
            ...demoVariant,
            variant_id: "01a2012d-9d01-7b3e-8c4f-2a6d9e1f0b37",
            variant_name: "app.support",
            config_name: "support",
            revision: 1,
            parameters: supportParams,
            created_at: "2026-11-22T03:10:04.512Z",
            updated_at: "2026-11-22T03:10:04.512Z",
          } satisfies AppVariant,
        },
        errors: {
          400: withKeyErrors(400, "The app already has a config of that name", { configExists: configExists() }),
          404: responseRef("AppNotFound"),
        },
      },
    },
    async (c) => {
      const { base_id, new_config_name } = c.req.valid("json");
      const application = { slug: null, version: null, id: base_id };
      const params = parametersAsSent(await c.req.text());
      const write = await writeAs(c, [base_id], (db) => addConfig(db, application, new_config_name, c.var.claim, params));
      settleClaim(c, write);
      if (write.outcome === "exists") throw configExists();
      if (write.outcome === "forbidden") throw forbidden();
      if (write.outcome !== "done") throw appNotFound();
      return c.json(configAsAppVariant(write.config), 200);
    },
  ),
  route(
    {
      method: "put",
      path: "/variants/{variant_id}/parameters",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          {
            name: "PUT /variants/{id}/parameters",
            path: "/variants/{variantId}/parameters",
            body: { parameters: { n: 2 } },
            trips: 1,
          },
        ],
      },
      auth: "key",
      write: true,
      params: variantPath,
      body: {
        schema: UpdateVariantParametersBody,
        id: "UpdateVariantParameters",
        examples: globalThis.DOCUMENTATION && {
          newParameters: {
            summary: "New parameters",
            value: { parameters: { ...DEMO_CONFIG_PARAMS, temperature: 0.7 } },
          },
        },
        maxBytes: MAX_CONFIG_BODY_BYTES,
      },
      idempotencyKey: "replays",
      doc: globalThis.DOCUMENTATION && {
        operationId: "updateVariantParameters",
        tag: "Variants",
        summary: "Commit new parameters to a variant",
        description:
          "`parameters` become the variant's next revision: they replace the latest revision's (no merge), its url " +
          "is kept, as with POST /variants/configs/commit. Each request adds a revision, a repeated one too: send an " +
          "Idempotency-Key to retry safely. Answers null.",
        ok: { schema: z.null(), description: "Committed as the variant's next revision", example: null },
        errors: { 404: responseRef("VariantNotFound") },
      },
    },
    async (c) => {
      const refs = { application: null, variant: null, variantId: c.req.valid("param").variant_id };
      const change = {
        params: parametersAsSent(await c.req.text()),
        url: null,
        message: c.req.valid("json").commit_message ?? null,
      };
      const write = await writeAs(c, configRefOrder(refs), (db) => commitConfig(db, refs, change, c.var.claim));
      settleClaim(c, write);
      if (write.outcome === "forbidden") throw forbidden();
      if (write.outcome !== "done") throw variantNotFound();
      return c.json(null, 200);
    },
  ),
  route(
    {
      method: "delete",
      path: "/variants/{variant_id}",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          { name: "DELETE /variants/{id}", path: "/variants/{removableId}", trips: 1 },
          { name: "DELETE /variants/{id}, deployed", path: "/variants/{variantId}", status: 409, trips: 1 },
        ],
      },
      auth: "key",
      write: true,
      params: variantPath,
      query: dryRunQueryOf("answer what the removal would remove (the config's name, its revisions)"),
      doc: globalThis.DOCUMENTATION && {
        operationId: "removeVariant",
        tag: "Variants",
        summary: "Remove a variant",
        description:
          "The variant leaves the app's list and every lookup by its name or id, and its config name is free again. " +
          "History is kept: environment histories point at its revisions, which stay readable by their ids (POST " +
          "/variants/configs/fetch with `variant_ref.id`, GET /configs/deployment/{deployment_revision_id}) but are " +
          "never deployed again (deploying one is a 409). While an environment runs one of its revisions, the variant is not removed " +
          "(409): deploy another variant there first. The platform removed it, history and all, without that check.",
        ok: {
          schema: z.union([z.null(), RemoveVariantDryRun]),
          description: "The variant is removed; with `?dry_run=true`, what removing it would remove",
          examples: {
            removed: { summary: "Removed", value: null },
            dryRun: {
              summary: "?dry_run=true",
              value: {
                dry_run: true,
                variant_id: EXAMPLE_VARIANT_ID,
                app_id: DEMO_APP_ID,
                config_name: "support",
                kind: "delete",
                revisions: 2,
              },
            },
          },
        },
        errors: {
          404: responseRef("VariantNotFound"),
          409: errorResponse(
            "An environment runs one of the variant's revisions (the detail names each such environment); nothing was written",
            variantStillDeployed(["production"]),
          ),
        },
      },
    },
    async (c) => {
      const { variant_id } = c.req.valid("param");
      if (c.req.valid("query").dry_run) {
        const preview = await writeAs(c, [variant_id], (db) => previewVariantRemoval(db, variant_id));
        if (preview === "not_found") throw variantNotFound();
        if (preview === "forbidden") throw forbidden();
        if (!("outcome" in preview)) throw variantStillDeployed(preview.deployedTo);
        const { appId, name, revisions } = preview;
        return c.json({ dry_run: true, variant_id, app_id: appId, config_name: name, kind: "delete", revisions } as const, 200);
      }
      const removed = await writeAs(c, [variant_id], (db) => removeVariant(db, variant_id));
      if (removed === "not_found") throw variantNotFound();
      if (removed === "forbidden") throw forbidden();
      if (removed !== "done") throw variantStillDeployed(removed.deployedTo);
      return c.json(null, 200);
    },
  ),
  route(
    {
      method: "get",
      path: "/variants/{variant_id}",
      roundTrips: globalThis.ROUTE_FACTS && { cases: [{ name: "GET a variant", path: "/variants/{variantId}", trips: 1 }] },
      auth: "key",
      params: variantPath,
      doc: globalThis.DOCUMENTATION && {
        operationId: "getVariant",
        tag: "Variants",
        summary: "Read a variant with its latest revision",
        description: REMOVED,
        ok: { schema: AppVariant, description: "The variant", example: demoVariant },
        errors: {
          404: responseRef("VariantNotFound"),
        },
      },
    },
    async (c) => {
      const { variant_id } = c.req.valid("param");
      const variant = await readAs(c, [variant_id], (db) => getVariant(db, variant_id));
      if (!variant) throw variantNotFound();
      return c.json(toAppVariant(variant), 200);
    },
  ),
  route(
    {
      method: "get",
      path: "/variants/{variant_id}/revisions",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [{ name: "GET its revisions", path: "/variants/{variantId}/revisions", trips: 1 }],
      },
      auth: "key",
      params: variantPath,
      doc: globalThis.DOCUMENTATION && {
        operationId: "getVariantRevisions",
        tag: "Variants",
        summary: "List a variant's revisions",
        description:
          `${REMOVED} A history of up to ${VARIANT_REVISIONS_PAGE_ROWS} revisions is read in one round trip; a longer one ` +
          `streams, read ${VARIANT_REVISIONS_PAGE_ROWS} revisions at a time as the client takes the body: one more round ` +
          "trip per page, never the whole history held at once. The list is the one the first page's read saw: " +
          "revisions committed meanwhile are not in it.",
        ok: { schema: z.array(AppVariantRevision), description: "Every revision, by number ascending", example: [demoRevision] },
        errors: { 404: responseRef("VariantNotFound") },
      },
    },
    async (c) => {
      const { variant_id } = c.req.valid("param");
      const revisions = await readAs(c, [variant_id], (db) => listVariantRevisions(db, variant_id));
      if (!revisions) throw variantNotFound();
      return pagedJson(c, revisions, toAppVariantRevision, (items) => items);
    },
  ),
  route(
    {
      method: "get",
      path: "/variants/{variant_id}/revisions/{revision_number}",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [{ name: "GET one revision", path: "/variants/{variantId}/revisions/1", trips: 1 }],
      },
      auth: "key",
      params: {
        schema: VariantRevisionParams,
        examples: globalThis.DOCUMENTATION && { variant_id: EXAMPLE_VARIANT_ID, revision_number: "2" },
      },
      doc: globalThis.DOCUMENTATION && {
        operationId: "getVariantRevision",
        tag: "Variants",
        summary: "Read one revision of a variant",
        description: REMOVED,
        ok: { schema: AppVariantRevision, description: "The revision", example: demoRevision },
        errors: {
          404: responseRef("VariantRevisionNotFound"),
        },
      },
    },
    async (c) => {
      const { variant_id, revision_number } = c.req.valid("param");
      const revision = await readAs(c, [variant_id], (db) => getVariantRevision(db, variant_id, revision_number));
      if (revision === "variant_not_found") throw variantNotFound();
      if (!revision) throw variantRevisionNotFound();
      return c.json(toAppVariantRevision(revision), 200);
    },
  ),
];

/** The responses the routes above share in the document. */
export const variantsResponses = (): SharedResponses => ({
  NoVariantDeployed: errorResponse(
    "The app does not exist, is not visible to the caller, or has no such environment; or nothing is deployed there",
    { environmentNotFound: appEnvironmentNotFound(), nothingDeployed: nothingDeployed() },
  ),
  VariantNotFound: errorResponse(
    "The variant does not exist, was removed, or is not visible to the caller (not told apart)",
    variantNotFound(),
  ),
  VariantRevisionNotFound: errorResponse("The variant is not found, or it has no revision of that number", {
    variantNotFound: variantNotFound(),
    revisionNotFound: variantRevisionNotFound(),
  }),
});
