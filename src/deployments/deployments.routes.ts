import { type Context, Hono } from "hono";
import { requireApiKey } from "../auth/require-api-key";
import { toConfigOutput, toConfigRefs } from "../configs/configs.schemas";
import type { Config } from "../db/configs";
import { type DeploymentTarget, deployConfig } from "../db/deployments";
import type { IdempotencyClaim } from "../db/idempotency";
import { environmentETag, expectedState } from "../environments/environment-etag";
import { type CallerEnv, writeAs } from "../http/d1-session";
import {
  type ApiError,
  appEnvironmentNotFound,
  configNotFound,
  deploymentRevisionNotFound,
  environmentMovedOn,
  forbidden,
  variantNotFound,
  variantRemoved,
} from "../http/errors";
import { idempotent, settleClaim } from "../http/idempotency";
import { jsonBody, validate } from "../http/validation";
import type { AppEnv } from "../types";
import { DeployConfigBody, DeployToEnvironmentBody, REVERTED, RevertParams } from "./deployments.schemas";

/**
 * Runs a deployment as the caller, with the request's If-Match and Idempotency-Key, and answers the config now
 * deployed, with the environment's new ETag; or the error that says why nothing was. `notFound` names what is
 * missing as the route's client knows it.
 */
async function deploy<E extends CallerEnv>(
  c: Context<E>,
  who: { claim: IdempotencyClaim | null },
  target: DeploymentTarget,
  notFound: (missing: "app" | "config" | "environment") => ApiError,
): Promise<Config> {
  const expected = expectedState(c.req.header("If-Match"));
  const outcome = await writeAs(c, (db) => deployConfig(db, target, expected, who.claim));
  settleClaim(c, outcome);
  switch (outcome.outcome) {
    case "done":
      if (outcome.config.environment) {
        const { id, revision } = outcome.config.environment;
        c.header("ETag", environmentETag({ environmentId: id, revision }));
      }
      return outcome.config;
    case "forbidden":
      throw forbidden();
    case "moved_on":
      throw environmentMovedOn();
    case "removed":
      throw variantRemoved();
    case "not_found":
      throw notFound(outcome.missing);
  }
}

const environmentOrConfig = (missing: "app" | "config" | "environment") =>
  missing === "environment" ? appEnvironmentNotFound() : configNotFound();

/**
 * Deploying and reverting: each makes exactly one new environment revision (gapless, the database's own check),
 * one deployment row, and moves the environment's current pointers, in one batch. Mounted at the root: the
 * platform's paths for these live under three prefixes.
 */
export const deploymentsRoutes = new Hono<AppEnv>()
  .post("/variants/configs/deploy", requireApiKey, ...jsonBody(), idempotent, validate("json", DeployConfigBody), async (c) => {
    const config = await deploy(c, c.var, toConfigRefs(c.req.valid("json")), environmentOrConfig);
    return c.json(toConfigOutput(config), 200);
  })
  .post(
    "/environments/deploy",
    requireApiKey,
    ...jsonBody(),
    idempotent,
    validate("json", DeployToEnvironmentBody),
    async (c) => {
      const { environment_name, variant_id } = c.req.valid("json");
      const target = {
        application: null,
        variant: null,
        variantId: variant_id,
        environment: { slug: environment_name, version: null, id: null },
      };
      await deploy(c, c.var, target, (missing) => (missing === "environment" ? appEnvironmentNotFound() : variantNotFound()));
      return c.json(null, 200);
    },
  )
  .post(
    "/configs/deployment/:deployment_revision_id/revert",
    requireApiKey,
    idempotent,
    validate("param", RevertParams),
    async (c) => {
      const { deployment_revision_id } = c.req.valid("param");
      const target = {
        application: null,
        variant: null,
        environment: { slug: null, version: null, id: deployment_revision_id },
      };
      await deploy(c, c.var, target, deploymentRevisionNotFound);
      return c.json(REVERTED, 200);
    },
  );
