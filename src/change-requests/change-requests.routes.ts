import { expectedState } from "../core/environment-etag";
import { appNotFound, environmentMovedOn, noSplit, revisionNotFound } from "../http/core-errors";
import { readAs, writeAs } from "../http/d1-session";
import { forbidden } from "../http/errors";
import {
  codedConflictResponse,
  DEMO_APP_ID,
  DEMO_PROJECT_ID,
  DEMO_USER_ID,
  EXAMPLE_ENVIRONMENT_REVISION_ID,
  EXAMPLE_VARIANT_REVISION_ID,
  errorResponse,
} from "../http/openapi-parts";
import { route } from "../http/route";
import { ACTION_DESCRIPTION, act, actionErrors, actionRoute, answer, answered, ETAG_HEADER, requestPath } from "./actions";
import { changeRequestETag, toChangeRequestDiff, toChangeRequestSummary } from "./change-requests.answers";
import {
  ChangeRequest,
  ChangeRequestDiff,
  ChangeRequestPage,
  CreateChangeRequestBody,
  DEMO_CHANGE_REQUEST,
  DEMO_DIFF,
  EditChangeRequestBody,
  ListChangeRequestsQuery,
  REVIEWS_MAX,
  ReviewBody,
  UNFINISHED_MAX,
} from "./change-requests.schemas";
import { createChangeRequest, listChangeRequests, readChangeRequest, readDiffSides } from "./change-requests.sql.ts";
import {
  approvalUnbound,
  changeRequestNotFound,
  invalidState,
  selfApproval,
  staleVersion,
  tooManyOpen,
  tooManyReviews,
} from "./errors";
import { mailRequest } from "./mail";

export const changeRequestsRoutes = [
  route(
    {
      method: "post",
      path: "/change-requests",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          {
            name: "POST /change-requests, with an Idempotency-Key",
            path: "/change-requests",
            key: "requester",
            body: {
              app_id: "{requestedAppId}",
              environment: "staging",
              variant_revision_id: "{proposed}",
              title: "Keyed",
              reviewers: ["{requester.userId}"],
            },
            headers: { "Idempotency-Key": "round-trips-change-request" },
            trips: 1,
          },
          {
            name: "POST /change-requests, a reviewer who may not approve (422)",
            path: "/change-requests",
            key: "requester",
            body: {
              app_id: "{requestedAppId}",
              environment: "staging",
              variant_revision_id: "{proposed}",
              title: "Refused",
              reviewers: ["{account.userId}"],
            },
            status: 422,
            trips: 1,
          },
        ],
      },
      auth: "key",
      write: true,
      idempotencyKey: "replays",
      ifMatch: true,
      body: {
        schema: CreateChangeRequestBody,
        id: "CreateChangeRequest",
        examples: globalThis.DOCUMENTATION && {
          deploy: {
            summary: "Deploy a config revision to production",
            value: {
              app_id: DEMO_APP_ID,
              environment: "production",
              variant_revision_id: EXAMPLE_VARIANT_REVISION_ID,
              title: "Lower temperature",
            },
          },
          revertDraft: {
            summary: "A draft that deploys an earlier revision again",
            value: {
              app_id: DEMO_APP_ID,
              environment: "production",
              revert_to_revision_id: EXAMPLE_ENVIRONMENT_REVISION_ID,
              title: "Back to yesterday's config",
              draft: true,
            },
          },
          split: {
            summary: "Start a split of production: 10% to a config revision, 50% after an hour",
            value: {
              app_id: DEMO_APP_ID,
              environment: "production",
              split: {
                variant_revision_id: EXAMPLE_VARIANT_REVISION_ID,
                weight: 1000,
                steps: [{ weight: 5000, after_minutes: 60 }],
              },
              title: "Try the new prompt",
            },
          },
          promote: {
            summary: "Promote the candidate of production's running split",
            value: { app_id: DEMO_APP_ID, environment: "production", end_split: "promote", title: "Ship the new prompt" },
          },
        },
      },
      doc: globalThis.DOCUMENTATION && {
        operationId: "createChangeRequest",
        tag: "Change requests",
        summary: "Propose a change of an app's environment",
        description:
          "Proposes deploying a config revision of the app (`variant_revision_id`) or an earlier revision of the " +
          "environment again (`revert_to_revision_id`), a split of the environment or a change of its running one " +
          "(`split`, kind `split`), or the promote of its split's candidate (`end_split`, kind `promote`): exactly one. Its base is the environment now; with If-Match " +
          "(the environment's ETag, GET /apps/{app_id}/revisions/{environment_name}), only if it is still in that state " +
          `(else 412). A draft until submitted, else open. At most ${UNFINISHED_MAX} unfinished requests per app environment.`,
        ok: {
          schema: ChangeRequest,
          description: "The request made",
          example: DEMO_CHANGE_REQUEST,
          headers: ETAG_HEADER,
        },
        errors: {
          404: errorResponse("No such app visible to the caller, no such revision of it, or no split to promote", {
            appNotFound: appNotFound(),
            revisionNotFound: revisionNotFound(),
            noSplit: noSplit(),
          }),
          409: codedConflictResponse("Too many unfinished requests", { tooManyOpen: tooManyOpen(UNFINISHED_MAX) }),
          412: errorResponse("If-Match names another state of the environment: nothing written", environmentMovedOn()),
        },
      },
    },
    async (c) => {
      const body = c.req.valid("json");
      const expected = expectedState(c.req.header("If-Match"));
      const outcome = await writeAs(c, [body.app_id], (db) => createChangeRequest(db, body, expected, c.var.claim));
      const read = answered(c, outcome);
      if (outcome.outcome === "done" && !outcome.replayed && !body.draft)
        c.executionCtx.waitUntil(mailRequest(c.env, read.request, "opened"));
      return c.json(answer(read), 200);
    },
  ),
  route(
    {
      method: "get",
      path: "/change-requests",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          { name: "GET /change-requests", path: "/change-requests?app_id={requestedAppId}", key: "requester", trips: 1 },
          {
            name: "GET /change-requests?awaiting_my_review=true",
            path: "/change-requests?awaiting_my_review=true",
            key: "requester",
            trips: 1,
          },
        ],
      },
      auth: "key",
      query: {
        schema: ListChangeRequestsQuery,
        examples: globalThis.DOCUMENTATION && {
          app_id: DEMO_APP_ID,
          environment: "production",
          state: "open",
          author: DEMO_USER_ID,
          project_id: DEMO_PROJECT_ID,
          cursor: DEMO_CHANGE_REQUEST.id,
          awaiting_my_review: "true",
          limit: 50,
        },
      },
      doc: globalThis.DOCUMENTATION && {
        operationId: "listChangeRequests",
        tag: "Change requests",
        summary: "List change requests",
        description:
          "Those of `app_id`, else of `project_id`, else of the key's project, newest first, without their reviews; " +
          "`state` (repeatable) filters by the state as read; `awaiting_my_review=true`, those the caller may approve and " +
          "has not reviewed at their current version. What the caller cannot see matches nothing.",
        ok: {
          schema: ChangeRequestPage,
          description: "A page of requests",
          example: { change_requests: [toExampleSummary()], next_cursor: null },
        },
      },
    },
    async (c) => {
      const query = c.req.valid("query");
      const page = await readAs(c, [query.app_id ?? null, query.project_id ?? null], (db) => listChangeRequests(db, query));
      return c.json(
        {
          change_requests: page.rows.map(toChangeRequestSummary),
          next_cursor: page.nextCursor,
        },
        200,
      );
    },
  ),
  route(
    {
      method: "get",
      path: "/change-requests/{change_request_id}",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [{ name: "GET /change-requests/{id}", path: "/change-requests/{requestId}", key: "requester", trips: 1 }],
      },
      auth: "key",
      params: requestPath,
      doc: globalThis.DOCUMENTATION && {
        operationId: "getChangeRequest",
        tag: "Change requests",
        summary: "Read a change request",
        description:
          "With its reviews, oldest first; its approvals counted now, with the environment's settings and the " +
          "reviewers' roles now. The ETag is what If-Match takes on its actions.",
        ok: {
          schema: ChangeRequest,
          description: "The request",
          example: DEMO_CHANGE_REQUEST,
          headers: ETAG_HEADER,
        },
        errors: {
          404: errorResponse("No change request of that id visible to the caller", changeRequestNotFound()),
        },
      },
    },
    async (c) => {
      const { change_request_id } = c.req.valid("param");
      const read = await readAs(c, [change_request_id], (db) => readChangeRequest(db, change_request_id));
      if (!read) throw changeRequestNotFound();
      c.header("ETag", changeRequestETag(read.request));
      return c.json(answer(read), 200);
    },
  ),
  route(
    {
      method: "patch",
      path: "/change-requests/{change_request_id}",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          {
            name: "PATCH /change-requests/{id}",
            path: "/change-requests/{requestId}",
            key: "requester",
            body: { title: "Recounted" },
            trips: 1,
          },
          {
            name: "PATCH /change-requests/{id}, a reviewer who may not approve (422)",
            path: "/change-requests/{requestId}",
            key: "requester",
            body: { reviewers: ["{account.userId}"] },
            status: 422,
            trips: 1,
          },
        ],
      },
      auth: "key",
      write: true,
      params: requestPath,
      body: {
        schema: EditChangeRequestBody,
        id: "EditChangeRequest",
        examples: globalThis.DOCUMENTATION && {
          retitle: {
            summary: "A new title (approvals kept)",
            value: { title: "Lower temperature to 0.2" },
          },
          repropose: {
            summary: "Another config revision (approvals reset)",
            value: { variant_revision_id: EXAMPLE_VARIANT_REVISION_ID },
          },
        },
      },
      idempotencyKey: "replays",
      ifMatch: true,
      doc: globalThis.DOCUMENTATION && {
        operationId: "editChangeRequest",
        tag: "Change requests",
        summary: "Edit a change request",
        description:
          "Its author only, while draft, open, approved or scheduled. Another proposal (`variant_revision_id` or " +
          "`revert_to_revision_id` of a deploy or revert request, `split` of a split request; a promote request takes " +
          "neither, and another kind's field is a 422) bumps `version`: earlier reviews stay listed, `stale`, and count for nothing; the " +
          "request is open again (a scheduled one unscheduled). A title or description alone changes neither. Each edit " +
          `renews \`expires_at\`. ${ACTION_DESCRIPTION}`,
        ok: {
          schema: ChangeRequest,
          description: "The request now",
          example: DEMO_CHANGE_REQUEST,
          headers: ETAG_HEADER,
        },
        errors: actionErrors({ invalidState: invalidState("rejected") }, { revisionNotFound: revisionNotFound() }),
      },
    },
    async (c) => {
      const edit = c.req.valid("json");
      return c.json(
        answer(
          await act(c, c.var, c.req.valid("param").change_request_id, {
            action: "edit",
            edit,
          }),
        ),
        200,
      );
    },
  ),
  actionRoute(
    "submit",
    globalThis.DOCUMENTATION && {
      operationId: "submitChangeRequest",
      summary: "Submit a draft change request",
      description: "Its author only: the draft is open for review.",
    },
    globalThis.ROUTE_FACTS && {
      cases: [
        { name: "POST /change-requests/{id}/submit", path: "/change-requests/{draftId}/submit", key: "requester", trips: 1 },
      ],
    },
  ),
  route(
    {
      method: "post",
      path: "/change-requests/{change_request_id}/reviews",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          {
            name: "POST /change-requests/{id}/reviews, with an Idempotency-Key",
            path: "/change-requests/{requestId}/reviews",
            key: "requester",
            body: { kind: "comment", comment: "Counted." },
            headers: { "Idempotency-Key": "round-trips-review" },
            trips: 1,
          },
        ],
      },
      auth: "key",
      write: true,
      params: requestPath,
      body: {
        schema: ReviewBody,
        id: "ReviewChangeRequest",
        examples: globalThis.DOCUMENTATION && {
          approve: {
            summary: "Approve version 1",
            value: { kind: "approve", version: 1 },
          },
          decline: {
            summary: "Decline, saying why",
            value: { kind: "decline", comment: "Not before the release." },
          },
          comment: {
            summary: "A comment",
            value: { kind: "comment", comment: "Checked on staging." },
          },
        },
      },
      idempotencyKey: "replays",
      ifMatch: true,
      doc: globalThis.DOCUMENTATION && {
        operationId: "reviewChangeRequest",
        tag: "Change requests",
        summary: "Approve, decline or comment on a change request",
        description:
          "While open or approved. `approve` and `decline`: a role the environment's protection settings name as " +
          "approvers, not the author (owners included) unless those settings allow self-approval; a decline rejects " +
          "the request. `comment`: any role that may propose. `version`, if given, must be the current one (else a " +
          "409, `stale version`); else the review binds to it. An approve must name what it approves, `version` or " +
          "If-Match with the request's ETag, else 428 (judged after every other refusal). " +
          `A user's approval counts once. At most ${REVIEWS_MAX} reviews. ${ACTION_DESCRIPTION}`,
        ok: {
          schema: ChangeRequest,
          description: "The request now",
          example: DEMO_CHANGE_REQUEST,
          headers: ETAG_HEADER,
        },
        errors: {
          ...actionErrors({
            invalidState: invalidState("rejected"),
            staleVersion: staleVersion(2),
            tooManyReviews: tooManyReviews(REVIEWS_MAX),
          }),
          403: errorResponse("The caller's role may not review so here, or is the author's", {
            forbidden: forbidden(),
            selfApproval: selfApproval(),
          }),
          428: errorResponse("An approve naming neither `version` nor If-Match: nothing written", approvalUnbound()),
        },
      },
    },
    async (c) => {
      const review = c.req.valid("json");
      const input = { action: review.kind, review };
      return c.json(answer(await act(c, c.var, c.req.valid("param").change_request_id, input)), 200);
    },
  ),
  actionRoute(
    "rebase",
    globalThis.DOCUMENTATION && {
      operationId: "rebaseChangeRequest",
      summary: "Rebase a change request on the environment now",
      description:
        "Its author, an owner or a workspace admin; while open, approved, scheduled or failed. The base becomes the " +
        "environment now, `version` is bumped (approvals reset), the request is open again and its expiry renewed.",
    },
    globalThis.ROUTE_FACTS && {
      cases: [
        { name: "POST /change-requests/{id}/rebase", path: "/change-requests/{requestId}/rebase", key: "requester", trips: 1 },
      ],
    },
  ),
  route(
    {
      method: "get",
      path: "/change-requests/{change_request_id}/diff",
      roundTrips: globalThis.ROUTE_FACTS && {
        cases: [
          { name: "GET /change-requests/{id}/diff", path: "/change-requests/{requestId}/diff", key: "requester", trips: 1 },
        ],
      },
      auth: "key",
      params: requestPath,
      doc: globalThis.DOCUMENTATION && {
        operationId: "diffChangeRequest",
        tag: "Change requests",
        summary: "What a change request would change",
        description:
          "The documents (`{config_name, params, url}`, null where nothing is deployed) of the environment at the " +
          "request's base, now, and of what it proposes; `diff` turns the current one into the proposed one, `drift` " +
          "the base into the current one (docs/CHANGE-REQUESTS.md §5's patch); `base_is_current` false: the environment " +
          "moved since the base, and an apply would conflict until a rebase.",
        ok: { schema: ChangeRequestDiff, description: "The request's diff", example: DEMO_DIFF },
        errors: { 404: errorResponse("No change request of that id visible to the caller", changeRequestNotFound()) },
      },
    },
    async (c) => {
      const { change_request_id } = c.req.valid("param");
      const sides = await readAs(c, [change_request_id], (db) => readDiffSides(db, change_request_id));
      if (!sides) throw changeRequestNotFound();
      return c.json(toChangeRequestDiff(sides), 200);
    },
  ),
  actionRoute(
    "cancel",
    globalThis.DOCUMENTATION && {
      operationId: "cancelChangeRequest",
      summary: "Cancel a change request",
      description: "Its author, an owner or a workspace admin; unless applied, rejected, cancelled or expired.",
    },
    globalThis.ROUTE_FACTS && {
      cases: [
        { name: "POST /change-requests/{id}/cancel", path: "/change-requests/{requestId}/cancel", key: "requester", trips: 1 },
        {
          name: "POST /change-requests/{id}/cancel, refused (cancelled)",
          path: "/change-requests/{requestId}/cancel",
          key: "requester",
          status: 409,
          trips: 1,
        },
      ],
    },
  ),
];

function toExampleSummary() {
  const { reviews, ...summary } = DEMO_CHANGE_REQUEST;
  return summary;
}
