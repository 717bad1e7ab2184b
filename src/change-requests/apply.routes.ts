import type { Context } from "hono";
import * as z from "zod/mini";
import { deploymentPreview } from "../core/deployment-preview.sql.ts";
import { storedConfigDocument } from "../core/diff";
import { splitRunning, splitsNotSetUp } from "../http/core-errors";
import { type CallerEnv, readAs, writeAs } from "../http/d1-session";
import { documented } from "../http/documentation";
import { forbidden } from "../http/errors";
import { codedConflictResponse, errorResponse } from "../http/openapi-parts";
import { route } from "../http/route";
import { dryRunQuery } from "../variants/deploy";
import { DRY_RUN_EXAMPLE, DryRunOutput } from "../variants/deployments.schemas";
import { canSealSecrets, openSecret, sealSecret } from "../webhooks/secret-box";
import { newWebhookSecret } from "../webhooks/signing";
import { ACTION_DESCRIPTION, act, actionErrors, actionRoute, answer, answered, ETAG_HEADER, requestPath } from "./actions";
import { type ApplyOutcome, type ApplyPreview, applyChangeRequest, type DiffSides, previewApply } from "./apply.sql.ts";
import { changeRequestETag, toChangeRequestDiff } from "./change-requests.answers";
import { ChangeRequest, DEMO_CHANGE_REQUEST, DEMO_DIFF, expectedWrites, SplitRequestDryRun } from "./change-requests.schemas";
import type { DiffSideRow } from "./change-requests.sql.ts";
import {
  changeRequestConflict,
  changeRequestMovedOn,
  changeRequestNotFound,
  invalidState,
  notApproved,
  revisionUnavailable,
} from "./errors";
import { mailRequest } from "./mail";

/** How far ahead a request may be scheduled (§3). */
export const SCHEDULE_MAX_DAYS = 90;
const DAY_MS = 86_400_000;

export const ScheduleBody = /* @__PURE__ */ z.object({
  scheduled_at: z
    .pipe(
      z.iso.datetime({ offset: true, abort: true }).check(
        z.refine((at) => Date.parse(at) > Date.now(), "scheduled_at must be in the future"),
        z.refine(
          (at) => Date.parse(at) <= Date.now() + SCHEDULE_MAX_DAYS * DAY_MS,
          `scheduled_at must be within ${SCHEDULE_MAX_DAYS} days`,
        ),
      ),
      // Stored as the cron compares it: UTC, milliseconds, `Z`.
      z.transform((at) => new Date(at).toISOString()),
    )
    .apply(
      /* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "When to apply it: in the future, within 90 days" }),
    ),
});

/** The errors of an apply that wrote nothing, or of its dry-run. */
function applyRefusal(outcome: Exclude<ApplyOutcome | ApplyPreview, { outcome: "done" | "key_reused" | "would_apply" }>) {
  switch (outcome.outcome) {
    case "not_found":
      return changeRequestNotFound();
    case "forbidden":
      return forbidden();
    case "invalid_state":
      return invalidState(outcome.state);
    case "moved_on":
      return changeRequestMovedOn();
    case "not_approved":
      return notApproved(outcome.approvals, outcome.approvalsRequired);
    case "revision_unavailable":
      return revisionUnavailable(outcome.removed);
    case "split_running":
      return splitRunning(outcome.appId, outcome.environment);
    case "conflict": {
      const { base, current, diff, drift } = toChangeRequestDiff(outcome.sides);
      return changeRequestConflict({ base, current, diff, drift });
    }
  }
}

/** A side of a request's diff as what an environment runs, or would (null: nothing). */
function deployedOf(side: DiffSideRow) {
  const { variantRevisionId, configName, revision } = side;
  const document = storedConfigDocument(side);
  if (variantRevisionId === null || configName === null || revision === null || document === null) return null;
  return { variantRevisionId, configName, revision, document };
}

/**
 * The dry-run's answer (§6) of an apply that would go through: the deploy it makes (a promote's too); a split
 * request's, the split it would start or change, which deploys nothing.
 */
function dryRunOf(
  preview: Extract<ApplyPreview, { outcome: "would_apply" }>,
  sides: DiffSides,
): DryRunOutput | SplitRequestDryRun {
  const { facts } = preview;
  const proposed = deployedOf(sides.proposed);
  if (!proposed) throw new Error("a change request proposes a config revision");
  const place = { dry_run: true, app_id: facts.appId, environment: facts.environment } as const;
  const { next_environment_revision, ...change } = deploymentPreview(facts.currentRevision, deployedOf(sides.current), proposed);
  if (facts.kind !== "split") return { ...place, kind: facts.kind, next_environment_revision, ...change };
  const { weight, steps, promote_at_end, running } = JSON.parse(facts.split ?? "{}");
  return { ...place, kind: "split", split: { starts: running === null, weight, steps, promote_at_end }, ...change };
}

/** Applies request `id` as the caller (or, `dryRun`, answers what that would do), with its If-Match and Idempotency-Key. */
async function apply<E extends CallerEnv>(
  c: Context<E>,
  id: string,
  dryRun: boolean,
  claim: Parameters<typeof applyChangeRequest>[3],
) {
  const expected = expectedWrites(c.req.header("If-Match"), id);
  if (dryRun) {
    const preview = await readAs(c, [id], (db) => previewApply(db, id, expected));
    if (preview.outcome !== "would_apply") throw applyRefusal(preview);
    c.header("ETag", changeRequestETag({ id, writes: preview.facts.writes }));
    return dryRunOf(preview, preview.sides);
  }
  const seal = () => {
    if (!canSealSecrets(c.env)) throw splitsNotSetUp();
    return sealSecret(c.env, newWebhookSecret());
  };
  const outcome = await writeAs(c, [id], (db) => applyChangeRequest(db, id, expected, claim, seal));
  if (outcome.outcome === "done" && !outcome.replayed)
    c.executionCtx.waitUntil(mailRequest(c.env, outcome.read.request, "applied"));
  if (outcome.outcome === "done" && outcome.sealedSecret)
    return { ...answer(answered(c, outcome)), verdict_secret: await openSecret(c.env, outcome.sealedSecret) };
  if (outcome.outcome === "done" || outcome.outcome === "key_reused") return answer(answered(c, outcome));
  throw applyRefusal(outcome);
}

/** The 409s of an apply, for the document (where it is built; the Worker drops them, with the examples they name). */
const applyConflicts = () => ({
  notApproved: notApproved(1, 2),
  revisionUnavailable: revisionUnavailable(false),
  conflict: changeRequestConflict(DEMO_DIFF),
  invalidState: invalidState("open"),
});

/** Applying and scheduling a change request (docs/CHANGE-REQUESTS.md §3); the minute cron's part is cron.sql.ts's. */
export const applyRoutes = [
  route(
    {
      method: "post",
      path: "/change-requests/{change_request_id}/apply",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          {
            name: "POST /change-requests/{id}/apply?dry_run=true",
            path: "/change-requests/{applyRequestId}/apply?dry_run=true",
            trips: 1,
          },
          {
            name: "POST /change-requests/{id}/apply, with an Idempotency-Key",
            path: "/change-requests/{applyRequestId}/apply",
            headers: { "Idempotency-Key": "round-trips-apply" },
            trips: 1,
          },
          {
            // The first batch finds every check passed, the second starts the split (README.md, "Splits").
            name: "POST /change-requests/{id}/apply, a split request",
            path: "/change-requests/{splitRequestId}/apply",
            trips: 2,
          },
          {
            name: "POST /change-requests/{id}/apply, applied already",
            path: "/change-requests/{applyRequestId}/apply",
            status: 409,
            trips: 1,
          },
        ],
      },
      auth: "key",
      write: true,
      params: requestPath,
      query: dryRunQuery,
      idempotencyKey: "replays",
      ifMatch: true,
      doc: globalThis.DOCUMENTATION && {
        operationId: "applyChangeRequest",
        tag: "Change requests",
        summary: "Apply an approved change request",
        description:
          "Any proposer: deploys what the request proposes, as a deploy or revert would, all at once, checking " +
          "as it writes that the request is approved now (its approvals counted with the settings and roles " +
          "of that moment), its config revision still deployable and the environment still at its base; else 409, " +
          "nothing written, the request unchanged. A protected environment is reached this way. A split request starts or " +
          "changes the split as PUT …/split would (the answer of a start has its `verdict_secret`, shown this once and to its Idempotency-Key's replay), a " +
          "promote request promotes as DELETE …/split?outcome=promote would; either is a conflict once the split moved. With " +
          "`?dry_run=true`, the same answer, errors included, or what it would change; nothing written. " +
          ACTION_DESCRIPTION,
        ok: {
          schema: z.union([ChangeRequest, DryRunOutput, SplitRequestDryRun]),
          description:
            "The request, applied; with `?dry_run=true`, what applying it would change: the deploy it makes (a " +
            "promote's too), or the split a split request would start or change (its base and candidate, weight, " +
            "steps and promote_at_end, and their diff; nothing deployed)",
          examples: {
            applied: {
              summary: "Applied",
              value: {
                ...DEMO_CHANGE_REQUEST,
                state: "applied",
                applied: {
                  at: DEMO_CHANGE_REQUEST.updated_at,
                  by: DEMO_CHANGE_REQUEST.author,
                  environment_revision: 5,
                  environment_revision_id: "01a2012d-8a20-7c3e-9a51-0c4f1e2d3b41",
                  scheduled: false,
                },
              },
            },
            dryRun: { summary: "?dry_run=true", value: { ...DRY_RUN_EXAMPLE, environment: "production" } },
            splitDryRun: {
              summary: "?dry_run=true, a split request: the split it would start",
              value: {
                dry_run: true,
                app_id: DRY_RUN_EXAMPLE.app_id,
                environment: "production",
                kind: "split",
                split: { starts: true, weight: 1000, steps: [{ weight: 5000, after_minutes: 60 }], promote_at_end: false },
                current: DRY_RUN_EXAMPLE.current,
                proposed: DRY_RUN_EXAMPLE.proposed,
                diff: DRY_RUN_EXAMPLE.diff,
              },
            },
          },
          headers: ETAG_HEADER,
        },
        errors: {
          ...actionErrors({}),
          409: codedConflictResponse(
            "Not approved now, the revision no longer deployable, the environment changed since the base (with what " +
              "changed), or the request's state forbids it; nothing written",
            applyConflicts(),
          ),
          501: errorResponse(
            "A split request's apply where the service cannot keep its verdict secret: no key to encrypt it is set up",
            splitsNotSetUp(),
          ),
        },
      },
    },
    async (c) => {
      const { change_request_id } = c.req.valid("param");
      return c.json(await apply(c, change_request_id, c.req.valid("query").dry_run, c.var.claim), 200);
    },
  ),
  route(
    {
      method: "post",
      path: "/change-requests/{change_request_id}/schedule",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          {
            name: "POST /change-requests/{id}/schedule",
            path: "/change-requests/{scheduledRequestId}/schedule",
            body: { scheduled_at: "{inADay}" },
            trips: 1,
          },
        ],
      },
      auth: "key",
      write: true,
      params: requestPath,
      body: {
        schema: ScheduleBody,
        id: "ScheduleChangeRequest",
        examples: globalThis.DOCUMENTATION && {
          tonight: { summary: "At a given time", value: { scheduled_at: "2026-12-01T22:00:00Z" } },
        },
      },
      idempotencyKey: "replays",
      ifMatch: true,
      doc: globalThis.DOCUMENTATION && {
        operationId: "scheduleChangeRequest",
        tag: "Change requests",
        summary: "Schedule an approved change request",
        description:
          "Any proposer: the minute cron applies it from `scheduled_at` on, as the caller (still a proposer then), by " +
          "the rules of an apply; a refusal then makes it `failed`, with why. A scheduled request does not expire. " +
          ACTION_DESCRIPTION,
        ok: {
          schema: ChangeRequest,
          description: "The request, scheduled",
          example: { ...DEMO_CHANGE_REQUEST, state: "scheduled", scheduled_at: "2026-12-01T22:00:00.000Z" },
          headers: ETAG_HEADER,
        },
        errors: actionErrors({ invalidState: invalidState("open") }),
      },
    },
    async (c) => {
      const { change_request_id } = c.req.valid("param");
      const scheduledAt = c.req.valid("json").scheduled_at;
      return c.json(answer(await act(c, c.var, change_request_id, { action: "schedule", scheduledAt })), 200);
    },
  ),
  actionRoute(
    "unschedule",
    globalThis.DOCUMENTATION && {
      operationId: "unscheduleChangeRequest",
      summary: "Unschedule a scheduled change request",
      description:
        "Any proposer: it is open again, and reads approved while its approvals still count; it expires as it would have.",
    },
    globalThis.ROUTE_FACTS && {
      cases: [
        { name: "POST /change-requests/{id}/unschedule", path: "/change-requests/{scheduledRequestId}/unschedule", trips: 1 },
      ],
    },
  ),
];
