import type { Context } from "hono";
import * as z from "zod/mini";
import { environmentETag, expectedState } from "../core/environment-etag";
import {
  endSplit,
  previewSplit,
  putSplit,
  readSplit,
  rotateSecret,
  type SplitOutcome,
  type SplitPlace,
  type SplitRefusal,
} from "../core/splits.sql.ts";
import {
  appEnvironmentNotFound,
  configNotFound,
  environmentMovedOn,
  environmentProtected,
  noSplit,
  splitRunning,
  splitsNotSetUp,
  variantRemoved,
} from "../http/core-errors";
import { type CallerEnv, readAs, writeAs } from "../http/d1-session";
import { type ApiError, forbidden } from "../http/errors";
import { settleClaim } from "../http/idempotency";
import { codedConflictResponse, DEMO_APP_ID, errorResponse, headerRef, responseRef } from "../http/openapi-parts";
import { route } from "../http/route";
import { variantArchived } from "../variants/errors";
import { canSealSecrets, openSecret, sealSecret } from "../webhooks/secret-box";
import { newWebhookSecret } from "../webhooks/signing";
import { candidateIsBase, candidateRequired, nothingDeployed } from "./errors";
import { EndSplitQuery, PutSplitBody, SplitDryRunOutput, SplitOutput, SplitParams, SplitWriteQuery } from "./splits.schemas";
import { verdictsRoutes } from "./verdicts.routes";

const PATH = "/apps/{app_id}/environments/{environment}/split";
const SPLIT = "/apps/{splitAppId}/environments/production/split";

/** The error of a split write that wrote nothing (or of its dry-run), by why. */
function splitRefusal(outcome: SplitRefusal, place: SplitPlace, appId: string | undefined, candidateGiven: boolean): ApiError {
  switch (outcome) {
    case "not_found":
      return appEnvironmentNotFound();
    case "forbidden":
    case "not_approved":
      return forbidden();
    case "no_split":
      return noSplit();
    case "no_candidate":
      return candidateGiven ? configNotFound() : candidateRequired();
    case "removed":
      return variantRemoved();
    case "archived":
      return variantArchived();
    case "nothing_deployed":
      return nothingDeployed(place.environment);
    case "same_as_base":
      return candidateIsBase();
    case "protected":
      return environmentProtected(appId ?? place.appId, place.environment);
    case "split_running":
      return splitRunning(appId ?? place.appId, place.environment);
    case "moved_on":
      return environmentMovedOn();
  }
}

/** Where the request writes: its path, and its If-Match. */
function placeOf<E extends CallerEnv>(
  c: Context<E>,
  { app_id, environment }: { app_id: string; environment: string },
): SplitPlace {
  return { appId: app_id, environment, expected: expectedState(c.req.header("If-Match")) };
}

/**
 * A write's answer, or its error: the split (a start's with its verdict secret, shown this once), with the
 * environment's ETag now, for the next write's If-Match, as a deploy answers it.
 */
async function answered<E extends CallerEnv>(c: Context<E>, outcome: SplitOutcome, place: SplitPlace, candidateGiven = false) {
  settleClaim(c, outcome);
  if (outcome.outcome !== "done") throw splitRefusal(outcome.outcome, place, outcome.appId, candidateGiven);
  c.header("ETag", environmentETag(outcome.state));
  const split = outcome.split as SplitOutput;
  if (outcome.sealedSecret === null) return split;
  return { ...split, verdict_secret: await openSecret(c.env, outcome.sealedSecret) };
}

const PUT_BODY = { candidate: { variant_ref: { slug: "next" } }, weight: 1000 };

/** docs/SPLITS.md §1: an environment's split, read, started or changed, and ended. */
export const splitsRoutes = [
  route(
    {
      method: "get",
      path: PATH,
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          { name: "GET split", path: SPLIT, trips: 1 },
          { name: "GET split, none", path: "/apps/{appId}/environments/staging/split", status: 404, trips: 1 },
        ],
      },
      auth: "key",
      params: { schema: SplitParams, examples: globalThis.DOCUMENTATION && { app_id: DEMO_APP_ID, environment: "production" } },
      doc: globalThis.DOCUMENTATION && {
        operationId: "getSplit",
        tag: "Splits",
        summary: "Read an environment's running split",
        description:
          "Its base and candidate, weight, salt, steps still to come, hold, last verdict and weight changes. Any role.",
        ok: { schema: SplitOutput, description: "The split" },
        errors: { 404: errorResponse("No such app or environment visible, or no split running", noSplit()) },
      },
    },
    async (c) => {
      const { app_id, environment } = c.req.valid("param");
      const split = await readAs(c, [app_id], (db) => readSplit(db, app_id, environment));
      if (!split) throw noSplit();
      return c.json(split as SplitOutput, 200);
    },
  ),
  route(
    {
      method: "put",
      path: PATH,
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          {
            name: "PUT split, a start",
            path: "/apps/{splitAppId}/environments/staging/split",
            body: PUT_BODY,
            headers: { "Idempotency-Key": "round-trips-split" },
            trips: 1,
          },
          { name: "PUT split, a change", path: SPLIT, body: { weight: 2000 }, trips: 1 },
          { name: "PUT split?dry_run=true", path: `${SPLIT}?dry_run=true`, body: { weight: 2000 }, trips: 1 },
          { name: "PUT split, running", path: SPLIT, body: PUT_BODY, status: 409, trips: 1 },
        ],
      },
      auth: "key",
      write: true,
      params: { schema: SplitParams, examples: globalThis.DOCUMENTATION && { app_id: DEMO_APP_ID, environment: "production" } },
      query: { schema: SplitWriteQuery, examples: globalThis.DOCUMENTATION && { dry_run: "true" } },
      body: {
        schema: PutSplitBody,
        id: "PutSplit",
        examples: globalThis.DOCUMENTATION && {
          start: {
            summary: "Start at 10%, then 50% after an hour and all after a day, promoted at the end",
            value: {
              candidate: { variant_ref: { slug: "main", version: 4 } },
              weight: 1000,
              steps: [
                { weight: 5000, after_minutes: 60 },
                { weight: 10000, after_minutes: 1440 },
              ],
              promote_at_end: true,
            },
          },
        },
      },
      idempotencyKey: "replays",
      ifMatch: true,
      doc: globalThis.DOCUMENTATION && {
        operationId: "putSplit",
        tag: "Splits",
        summary: "Start a split of an environment, or change a running one's weight and steps",
        description:
          "Starting (with `candidate`) answers the split with its `verdict_secret`, shown this once. A change takes " +
          "`weight`, `steps` and `promote_at_end` (a candidate or another salt: a 409, the split runs). Who may deploy there. " +
          "A protected environment refuses it (409): propose it with POST /change-requests.",
        ok: { schema: z.union([SplitOutput, SplitDryRunOutput]), description: "The split", headers: { ETag: headerRef("ETag") } },
        errors: {
          404: errorResponse("No such app, environment or candidate visible", {
            environmentNotFound: appEnvironmentNotFound(),
            configNotFound: configNotFound(),
          }),
          409: codedConflictResponse("A split runs already, the environment runs nothing, or it is protected", {
            splitRunning: splitRunning(DEMO_APP_ID, "production"),
          }),
          412: responseRef("EnvironmentMovedOn"),
          501: errorResponse(
            "The service cannot keep a split's verdict secret: no key to encrypt it is set up",
            splitsNotSetUp(),
          ),
        },
      },
    },
    async (c) => {
      const place = placeOf(c, c.req.valid("param"));
      const body = c.req.valid("json");
      const candidate = body.candidate?.variant_ref ?? null;
      const change = {
        candidate,
        weight: body.weight,
        steps: body.steps ?? [],
        promoteAtEnd: body.promote_at_end ?? false,
        salt: body.salt ?? null,
      };
      if (c.req.valid("query").dry_run) {
        const preview = await readAs(c, [place.appId], (db) => previewSplit(db, place, "put", change));
        if (preview.outcome !== "would")
          throw splitRefusal(preview.outcome as SplitRefusal, place, undefined, candidate !== null);
        c.header("ETag", environmentETag(preview.state));
        const kind = preview.split ? ("change" as const) : ("start" as const);
        return c.json(
          {
            dry_run: true,
            kind,
            app_id: place.appId,
            environment: place.environment,
            split: preview.split as SplitOutput | null,
          },
          200,
        );
      }
      if (!canSealSecrets(c.env)) throw splitsNotSetUp();
      const sealed = await sealSecret(c.env, newWebhookSecret());
      const outcome = await writeAs(c, [place.appId], (db) => putSplit(db, place, change, sealed, c.var.claim));
      return c.json(await answered(c, outcome, place, candidate !== null), 200);
    },
  ),
  ...verdictsRoutes,
  route(
    {
      method: "post",
      path: `${PATH}/secret`,
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          {
            name: "POST …/split/secret",
            path: "/apps/{splitAppId}/environments/development/split/secret",
            headers: { "Idempotency-Key": "round-trips-split-secret" },
            trips: 1,
          },
        ],
      },
      auth: "key",
      write: true,
      params: { schema: SplitParams, examples: globalThis.DOCUMENTATION && { app_id: DEMO_APP_ID, environment: "production" } },
      idempotencyKey: "replays",
      doc: globalThis.DOCUMENTATION && {
        operationId: "rotateSplitSecret",
        tag: "Splits",
        summary: "Give a running split a new verdict secret",
        description:
          "The split with its new `verdict_secret`, shown this once (and to its Idempotency-Key's replay while it runs); the " +
          "old one signs nothing from now on. For a secret lost, or never shown (a split a scheduled change request " +
          "started). Who may deploy there, a protected environment too: its traffic does not change. An event records it.",
        ok: { schema: SplitOutput, description: "The split, with its new secret" },
        errors: {
          404: errorResponse("No such app or environment visible, or no split running", {
            environmentNotFound: appEnvironmentNotFound(),
            noSplit: noSplit(),
          }),
          501: errorResponse(
            "The service cannot keep a split's verdict secret: no key to encrypt it is set up",
            splitsNotSetUp(),
          ),
        },
      },
    },
    async (c) => {
      const { app_id, environment } = c.req.valid("param");
      const place = { appId: app_id, environment, expected: null };
      if (!canSealSecrets(c.env)) throw splitsNotSetUp();
      const sealed = await sealSecret(c.env, newWebhookSecret());
      const outcome = await writeAs(c, [app_id], (db) => rotateSecret(db, place, sealed, c.var.claim));
      return c.json(await answered(c, outcome, place), 200);
    },
  ),
  route(
    {
      method: "delete",
      path: PATH,
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          { name: "DELETE split?outcome=abort", path: "/apps/{splitAppId}/environments/staging/split?outcome=abort", trips: 1 },
          {
            name: "DELETE split?outcome=promote&dry_run=true",
            path: "/apps/{splitAppId}/environments/development/split?outcome=promote&dry_run=true",
            trips: 1,
          },
          {
            name: "DELETE split?outcome=promote",
            path: "/apps/{splitAppId}/environments/development/split?outcome=promote",
            trips: 1,
          },
        ],
      },
      auth: "key",
      write: true,
      params: { schema: SplitParams, examples: globalThis.DOCUMENTATION && { app_id: DEMO_APP_ID, environment: "production" } },
      query: { schema: EndSplitQuery, examples: globalThis.DOCUMENTATION && { outcome: "promote", dry_run: "true" } },
      ifMatch: true,
      doc: globalThis.DOCUMENTATION && {
        operationId: "endSplit",
        tag: "Splits",
        summary: "End a split: promote its candidate, or abort back to its base",
        description:
          "`promote` deploys the candidate, a new revision in the environment's history (on a protected environment " +
          "only through a change request); `abort` leaves the base, also on a protected environment. Who may deploy there.",
        ok: {
          schema: z.union([SplitOutput, SplitDryRunOutput]),
          description: "The split as it ended, with `outcome`",
          headers: { ETag: headerRef("ETag") },
        },
        errors: {
          404: errorResponse("No such app or environment visible, or no split running", {
            environmentNotFound: appEnvironmentNotFound(),
            noSplit: noSplit(),
          }),
          409: codedConflictResponse("The environment is protected (a promote), or the candidate was archived or removed", {
            environmentProtected: environmentProtected(DEMO_APP_ID, "production"),
          }),
          412: responseRef("EnvironmentMovedOn"),
        },
      },
    },
    async (c) => {
      const place = placeOf(c, c.req.valid("param"));
      const { outcome: ending, dry_run } = c.req.valid("query");
      if (dry_run) {
        const preview = await readAs(c, [place.appId], (db) => previewSplit(db, place, ending));
        if (preview.outcome !== "would") throw splitRefusal(preview.outcome as SplitRefusal, place, undefined, false);
        c.header("ETag", environmentETag(preview.state));
        return c.json(
          {
            dry_run: true,
            kind: ending,
            app_id: place.appId,
            environment: place.environment,
            split: preview.split as SplitOutput | null,
          },
          200,
        );
      }
      const outcome = await writeAs(c, [place.appId], (db) => endSplit(db, place, ending));
      const split = await answered(c, outcome, place);
      return c.json(split, 200);
    },
  ),
];
