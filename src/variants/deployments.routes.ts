import * as z from "zod/mini";
import { appEnvironmentNotFound, configNotFound, variantNotFound, variantRemoved } from "../http/core-errors";
import {
  EXAMPLE_ENVIRONMENT_REVISION_ID,
  EXAMPLE_VARIANT_ID,
  environmentProtectedExample,
  errorResponse,
  headerRef,
  PROTECTED,
  responseRef,
  withKeyErrors,
} from "../http/openapi-parts";
import { route, type SharedResponses } from "../http/route";
import { demoConfigIn } from "./configs.routes";
import { ConfigOutput, toConfigOutput, toConfigRefs } from "./configs.schemas";
import { deploy, dryRun, dryRunQuery } from "./deploy";
import {
  DeployConfigBody,
  DeployToEnvironmentBody,
  DryRunOutput,
  REVERTED,
  RevertOutput,
  RevertParams,
} from "./deployments.schemas";
import { deploymentRevisionNotFound, variantArchived } from "./errors";

const CONDITIONS =
  "With If-Match, only if the environment is still in that state (else 412, nothing written); answers the " +
  "environment's new ETag.";

/**
 * The 409 of a deployment of a revision whose variant was archived, or (`removable`) removed, and of a protected
 * environment, beside that of an Idempotency-Key in flight.
 */
const variantConflict = (removable: boolean) =>
  removable
    ? withKeyErrors(
        409,
        "The revision belongs to a variant that was removed (DELETE /variants/{variant_id}): its revisions stay in " +
          "environment histories but are never deployed again; or to an archived variant, until it is unarchived; " +
          `nothing was written. Deploy another config. Or: ${PROTECTED}`,
        {
          variantRemoved: variantRemoved(),
          variantArchived: variantArchived(),
          environmentProtected: environmentProtectedExample(),
        },
      )
    : withKeyErrors(
        409,
        `The variant is archived: it is not deployed again until it is unarchived; nothing was written. Or: ${PROTECTED}`,
        { variantArchived: variantArchived(), environmentProtected: environmentProtectedExample() },
      );

/** A deployment's 200: this body, with the environment's new ETag. */

/**
 * A deployment's own errors: its 404, a 412, and the 409 of an archived variant; and, where the revision deployed may be
 * one of a removed variant, that one too.
 */
const deploymentErrors = (notFound: string, { removable = false }: { removable?: boolean } = {}) => ({
  404: responseRef(notFound),
  409: variantConflict(removable),
  412: responseRef("EnvironmentMovedOn"),
});

const environmentOrConfig = (missing: "app" | "config" | "environment") =>
  missing === "environment" ? appEnvironmentNotFound() : configNotFound();

/**
 * Deploying and reverting: each makes exactly one new environment revision (gapless, the database's own check),
 * one deployment row, and moves the environment's current pointers, in one batch. Mounted at the root: the
 * platform's paths for these live under three prefixes.
 */
export const deploymentsRoutes = [
  route(
    {
      method: "post",
      path: "/variants/configs/deploy",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          {
            name: "configs/deploy",
            path: "/variants/configs/deploy",
            body: { application_ref: { id: "{appId}" }, variant_ref: { slug: "main" }, environment_ref: { slug: "staging" } },
            trips: 1,
          },
          {
            name: "configs/deploy with If-Match: * and an Idempotency-Key",
            path: "/variants/configs/deploy",
            body: { application_ref: { id: "{appId}" }, variant_ref: { slug: "main" }, environment_ref: { slug: "development" } },
            headers: { "If-Match": "*", "Idempotency-Key": "round-trips-deploy" },
            trips: 1,
          },
          {
            name: "configs/deploy?dry_run=true",
            path: "/variants/configs/deploy?dry_run=true",
            body: { application_ref: { id: "{appId}" }, variant_ref: { slug: "main" }, environment_ref: { slug: "staging" } },
            trips: 1,
          },
          {
            name: "configs/deploy, If-Match of an earlier state",
            path: "/variants/configs/deploy",
            body: { application_ref: { id: "{appId}" }, variant_ref: { slug: "main" }, environment_ref: { slug: "production" } },
            headers: { "If-Match": "{staleETag}" },
            status: 412,
            trips: 1,
          },
          {
            name: "deploy, protected",
            path: "/variants/configs/deploy",
            body: {
              application_ref: { id: "{teamAppId}" },
              variant_ref: { slug: "main" },
              environment_ref: { slug: "development" },
            },
            status: 409,
            trips: 1,
          },
          {
            name: "deploy, bypassed",
            path: "/variants/configs/deploy",
            body: {
              application_ref: { id: "{teamAppId}" },
              variant_ref: { slug: "main" },
              environment_ref: { slug: "development" },
            },
            headers: { "Protection-Bypass": "counted" },
            trips: 1,
          },
        ],
      },
      auth: "key",
      write: true,
      body: {
        schema: DeployConfigBody,
        id: "DeployConfig",
        examples: globalThis.DOCUMENTATION && {
          latestToStaging: {
            summary: "The latest revision of a config, to staging",
            value: { application_ref: { slug: "demo-app" }, variant_ref: { slug: "main" }, environment_ref: { slug: "staging" } },
          },
          revisionToProduction: {
            summary: "A revision of a config, to production",
            value: {
              application_ref: { slug: "demo-app" },
              variant_ref: { slug: "main", version: 1 },
              environment_ref: { slug: "production" },
            },
          },
        },
      },
      idempotencyKey: "replays",
      ifMatch: true,
      protectionBypass: true,
      query: dryRunQuery,
      doc: globalThis.DOCUMENTATION && {
        operationId: "deployConfig",
        tag: "Deployments",
        summary: "Deploy a config revision to an app's environment",
        description:
          "Deploys the revision `variant_ref` names (its `version` or revision `id`, else the latest) to the " +
          "environment `environment_ref.slug` names, any of the app's, as a new environment revision. " +
          CONDITIONS,
        ok: {
          schema: z.union([ConfigOutput, DryRunOutput]),
          description: "The config as the environment now serves it",
          example: demoConfigIn("staging", 2),
          headers: { ETag: headerRef("ETag") },
        },
        errors: deploymentErrors("DeployTargetNotFound", { removable: true }),
      },
    },
    async (c) => {
      const target = toConfigRefs(c.req.valid("json"));
      if (c.req.valid("query").dry_run) return c.json(await dryRun(c, c.var, target, "deploy", environmentOrConfig), 200);
      const config = await deploy(c, c.var, target, environmentOrConfig);
      return c.json(toConfigOutput(config), 200);
    },
  ),
  route(
    {
      method: "post",
      path: "/environments/deploy",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          {
            name: "environments/deploy",
            path: "/environments/deploy",
            body: { environment_name: "staging", variant_id: "{variantId}" },
            trips: 1,
          },
          {
            name: "environments/deploy?dry_run=true",
            path: "/environments/deploy?dry_run=true",
            body: { environment_name: "staging", variant_id: "{variantId}" },
            trips: 1,
          },
        ],
      },
      auth: "key",
      write: true,
      body: {
        schema: DeployToEnvironmentBody,
        id: "DeployToEnvironment",
        examples: globalThis.DOCUMENTATION && {
          toStaging: { summary: "To staging", value: { environment_name: "staging", variant_id: EXAMPLE_VARIANT_ID } },
        },
      },
      idempotencyKey: "replays",
      ifMatch: true,
      protectionBypass: true,
      query: dryRunQuery,
      doc: globalThis.DOCUMENTATION && {
        operationId: "deployToEnvironment",
        tag: "Deployments",
        summary: "Deploy a variant's latest revision to an app's environment",
        description: `Deploys the variant's latest revision to its app's environment \`environment_name\`, as a new environment revision. ${CONDITIONS}`,
        ok: {
          schema: z.union([z.null(), DryRunOutput]),
          description: "Deployed",
          example: null,
          headers: { ETag: headerRef("ETag") },
        },
        errors: deploymentErrors("DeployVariantNotFound"),
      },
    },
    async (c) => {
      const { environment_name, variant_id } = c.req.valid("json");
      const target = {
        application: null,
        variant: null,
        variantId: variant_id,
        environment: { slug: environment_name, version: null, id: null },
      };
      const notFound = (missing: "app" | "config" | "environment") =>
        missing === "environment" ? appEnvironmentNotFound() : variantNotFound();
      if (c.req.valid("query").dry_run) return c.json(await dryRun(c, c.var, target, "deploy", notFound), 200);
      await deploy(c, c.var, target, notFound);
      return c.json(null, 200);
    },
  ),
  route(
    {
      method: "post",
      path: "/configs/deployment/{deployment_revision_id}/revert",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          { name: "revert", path: "/configs/deployment/{firstRevisionId}/revert", trips: 1 },
          { name: "revert?dry_run=true", path: "/configs/deployment/{firstRevisionId}/revert?dry_run=true", trips: 1 },
        ],
      },
      auth: "key",
      write: true,
      params: {
        schema: RevertParams,
        examples: globalThis.DOCUMENTATION && { deployment_revision_id: EXAMPLE_ENVIRONMENT_REVISION_ID },
      },
      idempotencyKey: "replays",
      ifMatch: true,
      protectionBypass: true,
      query: dryRunQuery,
      doc: globalThis.DOCUMENTATION && {
        operationId: "revertDeploymentRevision",
        tag: "Deployments",
        summary: "Deploy again what an environment revision deployed",
        description:
          "A new revision of that revision's environment, deploying the same variant revision; the history keeps " +
          `both. No body. ${CONDITIONS}`,
        ok: {
          schema: z.union([RevertOutput, DryRunOutput]),
          description: "Reverted",
          example: REVERTED,
          headers: { ETag: headerRef("ETag") },
        },
        errors: deploymentErrors("DeploymentRevisionNotFound", { removable: true }),
      },
    },
    async (c) => {
      const { deployment_revision_id } = c.req.valid("param");
      const target = {
        application: null,
        variant: null,
        environment: { slug: null, version: null, id: deployment_revision_id },
      };
      if (c.req.valid("query").dry_run) {
        return c.json(await dryRun(c, c.var, target, "revert", deploymentRevisionNotFound), 200);
      }
      await deploy(c, c.var, target, deploymentRevisionNotFound);
      return c.json(REVERTED, 200);
    },
  ),
];

/** The responses the routes above share in the document. */
export const deploymentsResponses = (): SharedResponses => ({
  DeployTargetNotFound: errorResponse(
    "No such app or config visible to the caller, or no revision of that version; or the app has no such environment",
    { configNotFound: configNotFound(), environmentNotFound: appEnvironmentNotFound() },
  ),
  DeployVariantNotFound: errorResponse(
    "The variant does not exist, was removed, or is not visible to the caller; or its app has no such environment",
    { variantNotFound: variantNotFound(), environmentNotFound: appEnvironmentNotFound() },
  ),
  DeploymentRevisionNotFound: errorResponse(
    "No environment revision of that id visible to the caller (not told apart)",
    deploymentRevisionNotFound(),
  ),
});
