/**
 * What the change requests' routes share (change-requests.routes.ts, apply.routes.ts): a write's outcome answered or
 * turned into its error, the request's path and ETag, and the action routes with their `act`.
 */
import type { Context } from "hono";
import type { IdempotencyClaim } from "../db/idempotency";
import { appNotFound, environmentMovedOn, noSplit, revisionNotFound } from "../http/core-errors";
import { type CallerEnv, writeAs } from "../http/d1-session";
import type { Documentation } from "../http/documentation";
import { type ApiError, forbidden } from "../http/errors";
import { settleClaim } from "../http/idempotency";
import { codedConflictResponse, errorResponse, headerRef } from "../http/openapi-parts";
import { type RouteDeclaration, route } from "../http/route";
import { type ActionInput, actOnChangeRequest } from "./actions.sql.ts";
import { changeRequestETag, toChangeRequest } from "./change-requests.answers";
import {
  ChangeRequest,
  ChangeRequestParams,
  DEMO_CHANGE_REQUEST,
  expectedWrites,
  REVIEWS_MAX,
  UNFINISHED_MAX,
} from "./change-requests.schemas";
import type { ChangeRequestRead, WriteOutcome } from "./change-requests.sql.ts";
import {
  approvalUnbound,
  changeRequestMovedOn,
  changeRequestNotFound,
  invalidState,
  notOfKind,
  reviewersRefused,
  selfApproval,
  splitCandidateKept,
  staleVersion,
  tooManyOpen,
  tooManyReviews,
} from "./errors";
import { actionMail, mailRequest } from "./mail";

/** Answers a write's outcome: the request with its ETag, or the error that says why nothing was written. */
export function answered<E extends CallerEnv>(c: Context<E>, outcome: WriteOutcome): ChangeRequestRead {
  settleClaim(c, outcome);
  switch (outcome.outcome) {
    case "done":
      c.header("ETag", changeRequestETag(outcome.read.request));
      return outcome.read;
    case "not_found":
      throw outcome.missing === "app"
        ? appNotFound()
        : outcome.missing === "revision"
          ? revisionNotFound()
          : outcome.missing === "split"
            ? noSplit()
            : changeRequestNotFound();
    case "split_candidate":
      throw splitCandidateKept(outcome.candidate);
    case "not_of_kind":
      throw notOfKind(outcome.field, outcome.kind);
    case "forbidden":
      throw outcome.self ? selfApproval() : forbidden();
    case "invalid_state":
      throw invalidState(outcome.state);
    case "stale_version":
      throw staleVersion(outcome.version);
    case "too_many_open":
      throw tooManyOpen(UNFINISHED_MAX);
    case "too_many_reviews":
      throw tooManyReviews(REVIEWS_MAX);
    case "reviewers_refused":
      throw reviewersRefused(outcome.refused);
    case "moved_on":
      throw outcome.of === "environment" ? environmentMovedOn() : changeRequestMovedOn();
  }
}

export const answer = ({ request, reviews }: ChangeRequestRead) => toChangeRequest(request, reviews);

export const requestPath = {
  schema: ChangeRequestParams,
  examples: globalThis.DOCUMENTATION && { change_request_id: DEMO_CHANGE_REQUEST.id },
};

export const ETAG_HEADER = { ETag: /* @__PURE__ */ headerRef("ETag") };

/** The refusals of an action on a request, by status. */
export const actionErrors = (conflicts: Record<string, ApiError>, notFound: Record<string, ApiError> = {}) => ({
  403: errorResponse("The caller's role may not take this action here", {
    forbidden: forbidden(),
  }),
  404: errorResponse("No change request of that id visible to the caller (not told apart)", {
    changeRequestNotFound: changeRequestNotFound(),
    ...notFound,
  }),
  409: codedConflictResponse("The request's state forbids it (an expired request's too), or a limit is reached", conflicts),
  412: errorResponse("If-Match names another state of the request: nothing written", changeRequestMovedOn()),
});

export const ACTION_DESCRIPTION =
  "With If-Match (the request's ETag), only if the request is still in that state (else 412). Answers the request " +
  "with its new ETag.";

/** What a change request's action route says of itself in the document. */
interface ActionText {
  operationId: string;
  summary: string;
  description: string;
}

/** An action's route: POST /change-requests/{id}/<action>, answered by `act`. */
export function actionRoute(
  action: "submit" | "rebase" | "cancel" | "unschedule",
  doc: Documentation<ActionText>,
  roundTrips: RouteDeclaration["roundTrips"],
) {
  return route(
    {
      method: "post",
      path: `/change-requests/{change_request_id}/${action}`,
      roundTrips,
      auth: "key",
      write: true,
      params: requestPath,
      idempotencyKey: "replays",
      ifMatch: true,
      // Where the document is built every caller passes its text; the Worker drops both.
      doc: globalThis.DOCUMENTATION && {
        ...(doc as ActionText),
        tag: "Change requests",
        description: `${(doc as ActionText).description} ${ACTION_DESCRIPTION}`,
        ok: {
          schema: ChangeRequest,
          description: "The request now",
          example: DEMO_CHANGE_REQUEST,
          headers: ETAG_HEADER,
        },
        errors: actionErrors({ invalidState: invalidState("applied") }),
      },
    },
    async (c) =>
      c.json(
        answer(
          await act(c, c.var, c.req.valid("param").change_request_id, {
            action,
          }),
        ),
        200,
      ),
  );
}

/** Takes an action on request `id` as the caller, with the request's If-Match and Idempotency-Key. */
export async function act<E extends CallerEnv>(
  c: Context<E>,
  who: { claim: IdempotencyClaim | null },
  id: string,
  input: ActionInput,
) {
  const expected = expectedWrites(c.req.header("If-Match"), id);
  // An approve names what it approves (§3). Naming neither version nor ETag, it is checked as an If-Match no state
  // matches (a write count of 0): every other refusal comes first, and where that would answer 412 this one is 428.
  const unbound = input.action === "approve" && input.review.version === undefined && expected === null;
  const outcome = await writeAs(c, [id], (db) => actOnChangeRequest(db, id, input, unbound ? 0 : expected, who.claim));
  if (unbound && outcome.outcome === "moved_on") throw approvalUnbound();
  const read = answered(c, outcome);
  const mail =
    outcome.outcome === "done" && !outcome.replayed && actionMail(input.action, !!outcome.reached, read.request.readState);
  if (mail) c.executionCtx.waitUntil(mailRequest(c.env, read.request, mail));
  return read;
}

/** Change requests (docs/CHANGE-REQUESTS.md §3): apply, schedule and unschedule are src/change-requests/apply.routes.ts's. */
