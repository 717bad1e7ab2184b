import type { Context } from "hono";
import { type Config, configRefOrder } from "../core/configs.sql.ts";
import { previewDeployment } from "../core/deployment-preview.sql.ts";
import { type DeploymentOutcome, type DeploymentTarget, deployConfig } from "../core/deployments.sql.ts";
import { environmentETag, expectedState } from "../core/environment-etag";
import type { IdempotencyClaim } from "../db/idempotency";
import { environmentMovedOn, protectionRefused, variantRemoved } from "../http/core-errors";
import { type CallerEnv, writeAs } from "../http/d1-session";
import { type ApiError, forbidden } from "../http/errors";
import { settleClaim } from "../http/idempotency";
import { type DryRunOutput, DryRunQuery } from "./deployments.schemas";
import { variantArchived } from "./errors";

/*
 * The deploy and dry-run plumbing of every route that deploys: the deployments' here (deployments.routes.ts), the current
 * API's (src/applications/revisions.routes.ts) and a change request's apply's `?dry_run` (src/change-requests/).
 */

/**
 * The state If-Match names, for a deploy or revert: one with a split running matches none, as no deploy is made while
 * one runs (an ETag read then is stale once the split ended).
 */
function deploysOn(c: Context) {
  const expected = expectedState(c.req.header("If-Match"));
  return expected?.split ? { environmentId: "", revision: -1 } : expected;
}

/**
 * Runs a deployment as the caller, with the request's If-Match, Idempotency-Key and Protection-Bypass, and answers
 * the config now deployed, with the environment's new ETag; or the error that says why nothing was. `notFound` names
 * what is missing as the route's client knows it. The current API's deploy (src/applications/revisions.routes.ts) too.
 */
export async function deploy<E extends CallerEnv>(
  c: Context<E>,
  who: { claim: IdempotencyClaim | null; bypassReason?: string | null },
  target: DeploymentTarget,
  notFound: (missing: "app" | "config" | "environment") => ApiError,
): Promise<Config> {
  const expected = deploysOn(c);
  const pass = { bypassReason: who.bypassReason ?? null };
  const outcome = await writeAs(c, configRefOrder(target), (db) => deployConfig(db, target, expected, who.claim, pass));
  settleClaim(c, outcome);
  if (outcome.outcome !== "done") throw refusal(outcome, notFound);
  if (outcome.config.environment) {
    const { id, revision } = outcome.config.environment;
    c.header("ETag", environmentETag({ environmentId: id, revision }));
  }
  return outcome.config;
}

/** The error of a deployment that wrote nothing, or of its dry-run: `notFound` as in `deploy`. */
function refusal(
  outcome: Exclude<DeploymentOutcome, { outcome: "done" | "key_reused" }>,
  notFound: (missing: "app" | "config" | "environment") => ApiError,
): ApiError {
  switch (outcome.outcome) {
    case "forbidden":
      return forbidden();
    case "moved_on":
      return environmentMovedOn();
    case "removed":
      return variantRemoved();
    case "archived":
      return variantArchived();
    case "not_found":
      return notFound(outcome.missing);
    case "refused":
      return protectionRefused(outcome);
  }
}

/**
 * `deploy`'s dry-run (docs/CHANGE-REQUESTS.md §6): its answer had it been called, errors included, with what it would
 * change and the environment's current ETag; nothing written, no Idempotency-Key claimed.
 */
export async function dryRun<E extends CallerEnv>(
  c: Context<E>,
  who: { bypassReason?: string | null },
  target: DeploymentTarget,
  kind: DryRunOutput["kind"],
  notFound: (missing: "app" | "config" | "environment") => ApiError,
): Promise<DryRunOutput> {
  const expected = deploysOn(c);
  const pass = { bypassReason: who.bypassReason ?? null };
  const outcome = await writeAs(c, configRefOrder(target), (db) => previewDeployment(db, target, expected, pass));
  if (outcome.outcome !== "preview") throw refusal(outcome, notFound);
  c.header("ETag", environmentETag(outcome.current));
  return { dry_run: true, app_id: outcome.appId, environment: outcome.environment, kind, ...outcome.preview };
}

/** `?dry_run`, on each deploy and revert. */
export const dryRunQuery = { schema: DryRunQuery, examples: globalThis.DOCUMENTATION && { dry_run: "true" as const } };
