import * as z from "zod/mini";
import { SplitChangeFields, SplitEdit, SplitProposal } from "../apps/splits.schemas";
import { documented, schemaName } from "../http/documentation";
import { queryFlag, storableText, uuid } from "../http/fields";
import {
  DEMO_APP_ID,
  DEMO_PROJECT_ID,
  DEMO_USER_ID,
  EXAMPLE_ENVIRONMENT_REVISION_ID,
  EXAMPLE_VARIANT_REVISION_ID,
} from "../http/openapi-parts";
import { DeploymentPreviewOutput } from "../variants/deployments.schemas";

/** The states a request is read in (docs/CHANGE-REQUESTS.md §3): `approved` and `expired` as read, the others stored. */
export const CHANGE_REQUEST_STATES = [
  "draft",
  "open",
  "approved",
  "scheduled",
  "applied",
  "rejected",
  "cancelled",
  "expired",
  "failed",
] as const;
export type ChangeRequestState = (typeof CHANGE_REQUEST_STATES)[number];

/** §7's limits. */
export const TITLE_MAX = 200;
export const DESCRIPTION_MAX = 10_000;
export const COMMENT_MAX = 5_000;
/** Requests not finished (draft, open, approved, scheduled, failed) per app environment. */
export const UNFINISHED_MAX = 50;
/** Reviews of one request. */
export const REVIEWS_MAX = 200;
/** Requested reviewers of one request. */
export const REVIEWERS_MAX = 20;

const title = /* @__PURE__ */ storableText("title").check(
  z.minLength(1),
  z.maxLength(TITLE_MAX),
  z.refine((value) => value.trim() !== "", "title must not be blank"),
);
const description = /* @__PURE__ */ storableText("description").check(z.maxLength(DESCRIPTION_MAX));
const environment = /* @__PURE__ */ z.enum(["development", "staging", "production"]);

/** Requested reviewers (§3): user ids, each once; who may approve there is checked as the request is written. */
const reviewers = /* @__PURE__ */ z
  .optional(
    z.array(uuid).check(
      z.maxLength(REVIEWERS_MAX),
      z.superRefine((ids, ctx) => {
        ids.forEach((id, index) => {
          if (ids.indexOf(id) < index)
            ctx.issues.push({ code: "custom", message: "reviewer given twice", input: id, path: [index] });
        });
      }),
    ),
  )
  .apply(
    /* @__PURE__ */ documented(
      globalThis.DOCUMENTATION && {
        description:
          "Requested reviewers: user ids of members who may approve on this environment (a role of its `approver_roles`; not " +
          "the author unless `allow_self_approval`), each once, at most 20; another is a 422 at its index",
      },
    ),
  );

export const CreateChangeRequestBody = /* @__PURE__ */ z
  .object({
    app_id: uuid,
    environment,
    variant_revision_id: z.optional(uuid).apply(
      /* @__PURE__ */ documented(
        globalThis.DOCUMENTATION && {
          description: "A config revision of the app to deploy",
        },
      ),
    ),
    revert_to_revision_id: z.optional(uuid).apply(
      /* @__PURE__ */ documented(
        globalThis.DOCUMENTATION && {
          description: "A revision of the environment to deploy again",
        },
      ),
    ),
    split: z.optional(SplitProposal),
    end_split: z
      .optional(z.literal("promote"))
      .apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "Promote the running split's candidate" })),
    title,
    description: z.optional(description),
    reviewers,
    draft: z
      .optional(z.boolean())
      .apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "Default false: open" })),
  })
  .check(
    z.refine(
      (body) =>
        [body.variant_revision_id, body.revert_to_revision_id, body.split, body.end_split].filter((given) => given !== undefined)
          .length === 1,
      { message: "exactly one of variant_revision_id, revert_to_revision_id, split and end_split is required" },
    ),
  );
export type CreateChangeRequestBody = z.output<typeof CreateChangeRequestBody>;

export const EditChangeRequestBody = /* @__PURE__ */ z
  .object({
    title: z.optional(title),
    description: z.optional(description),
    variant_revision_id: z.optional(uuid),
    revert_to_revision_id: z.optional(uuid),
    split: z.optional(SplitEdit).apply(
      /* @__PURE__ */ documented(
        globalThis.DOCUMENTATION && {
          description: "A split request's weight, steps and promote_at_end, all replaced (its candidate stays)",
        },
      ),
    ),
    reviewers,
  })
  .check(
    z.refine(
      (body) =>
        [body.variant_revision_id, body.revert_to_revision_id, body.split].filter((given) => given !== undefined).length < 2,
      { message: "at most one of variant_revision_id, revert_to_revision_id and split" },
    ),
    z.refine((body) => Object.values(body).some((value) => value !== undefined), { message: "nothing to change" }),
  );
export type EditChangeRequestBody = z.output<typeof EditChangeRequestBody>;

export const ReviewBody = /* @__PURE__ */ z
  .strictObject({
    kind: z.enum(["approve", "decline", "comment"]),
    comment: z.optional(z.nullable(storableText("comment").check(z.maxLength(COMMENT_MAX)))),
    version: z.optional(z.int().check(z.gte(1))).apply(
      /* @__PURE__ */ documented(
        globalThis.DOCUMENTATION && {
          description:
            "The version reviewed: another is refused (409); else the current one. An approve names it, or sends If-Match (else 428)",
        },
      ),
    ),
  })
  .check(
    z.refine((body) => body.kind !== "comment" || (body.comment ?? "") !== "", {
      message: "a comment review needs a comment",
      path: ["comment"],
    }),
  );
export type ReviewBody = z.output<typeof ReviewBody>;

export const ChangeRequestParams = /* @__PURE__ */ z.object({ change_request_id: uuid });

const stateFilter = /* @__PURE__ */ z.enum(CHANGE_REQUEST_STATES);
export const ListChangeRequestsQuery = /* @__PURE__ */ z.object({
  app_id: z.optional(uuid),
  environment: z.optional(environment),
  state: z
    .pipe(
      z.optional(z.union([stateFilter, z.array(stateFilter)])),
      z.transform((states) => (states === undefined ? [] : [...new Set([states].flat())])),
    )
    .apply(
      /* @__PURE__ */ documented(
        globalThis.DOCUMENTATION && {
          description: "Repeatable: requests in any of these states (as read)",
        },
      ),
    ),
  author: z.optional(uuid).apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "The author's user id" })),
  project_id: z.optional(uuid).apply(
    /* @__PURE__ */ documented(
      globalThis.DOCUMENTATION && {
        description: "Default: the key's project (unless app_id is given)",
      },
    ),
  ),
  cursor: z.optional(uuid).apply(
    /* @__PURE__ */ documented(
      globalThis.DOCUMENTATION && {
        description: "next_cursor of the previous page",
      },
    ),
  ),
  awaiting_my_review: queryFlag.apply(
    /* @__PURE__ */ documented(
      globalThis.DOCUMENTATION && {
        description:
          "true: only those the caller may approve now (open or approved, a role of `approver_roles`, not the author " +
          "unless `allow_self_approval`) and has not approved or declined at their current `version`",
      },
    ),
  ),
  limit: z._default(z.coerce.number().check(z.int(), z.gte(1), z.lte(200)), 50),
});
export type ListChangeRequestsQuery = z.output<typeof ListChangeRequestsQuery>;

// Answers.

const User = /* @__PURE__ */ z.object({ user_id: /* @__PURE__ */ z.uuid(), username: /* @__PURE__ */ z.string() });

const Base = /* @__PURE__ */ z
  .object({
    environment_revision: /* @__PURE__ */ z.int(),
    environment_revision_id: /* @__PURE__ */ z.nullable(/* @__PURE__ */ z.uuid()),
    variant_revision_id: /* @__PURE__ */ z.nullable(/* @__PURE__ */ z.uuid()),
  })
  .apply(
    /* @__PURE__ */ documented(
      globalThis.DOCUMENTATION && {
        description: "The environment when the request was made or last rebased (revision 0 and null ids: nothing deployed)",
      },
    ),
  );

export const Review = /* @__PURE__ */ z.object({
  id: /* @__PURE__ */ z.uuid(),
  kind: /* @__PURE__ */ z.enum(["approve", "decline", "comment"]),
  comment: /* @__PURE__ */ z.nullable(/* @__PURE__ */ z.string()),
  version: /* @__PURE__ */ z.int(),
  stale: /* @__PURE__ */ z.boolean().apply(
    /* @__PURE__ */ documented(
      globalThis.DOCUMENTATION && {
        description: "Made on an earlier version: counts for nothing",
      },
    ),
  ),
  reviewer: User,
  created_at: /* @__PURE__ */ z.iso.datetime(),
});

const ChangeRequestFields = {
  id: /* @__PURE__ */ z.uuid(),
  app_id: /* @__PURE__ */ z.uuid(),
  app_name: /* @__PURE__ */ z.string(),
  environment,
  project_id: /* @__PURE__ */ z.uuid(),
  kind: /* @__PURE__ */ z.enum(["deploy", "revert", "split", "promote"]),
  variant_revision_id: /* @__PURE__ */ z.uuid(),
  split: /* @__PURE__ */ z.nullable(SplitChangeFields).apply(
    /* @__PURE__ */ documented(
      globalThis.DOCUMENTATION && {
        description: "Kind `split`: the weight, steps and promote_at_end proposed (the candidate is `variant_revision_id`)",
      },
    ),
  ),
  config_name: /* @__PURE__ */ z.string(),
  revision: /* @__PURE__ */ z.int(),
  revert_to_revision_id: /* @__PURE__ */ z.nullable(/* @__PURE__ */ z.uuid()),
  base: Base,
  title: /* @__PURE__ */ z.string(),
  description: /* @__PURE__ */ z.string(),
  state: /* @__PURE__ */ z.enum(CHANGE_REQUEST_STATES),
  version: /* @__PURE__ */ z.int(),
  approvals: /* @__PURE__ */ z.int().apply(
    /* @__PURE__ */ documented(
      globalThis.DOCUMENTATION && {
        description: "Counted at this read with the settings and roles now",
      },
    ),
  ),
  approvals_required: /* @__PURE__ */ z.int(),
  author: User,
  reviewers: z
    .array(User)
    .apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "Requested reviewers, in the order given" })),
};

const ChangeRequestTail = {
  scheduled_at: /* @__PURE__ */ z.nullable(/* @__PURE__ */ z.iso.datetime()),
  expires_at: /* @__PURE__ */ z.iso.datetime(),
  applied: /* @__PURE__ */ z.nullable(
    /* @__PURE__ */ z.object({
      at: /* @__PURE__ */ z.iso.datetime(),
      by: /* @__PURE__ */ z.nullable(User),
      environment_revision: /* @__PURE__ */ z.nullable(/* @__PURE__ */ z.int()),
      environment_revision_id: /* @__PURE__ */ z.nullable(/* @__PURE__ */ z.uuid()),
      scheduled: /* @__PURE__ */ z.boolean(),
    }),
  ),
  failure: /* @__PURE__ */ z.nullable(
    /* @__PURE__ */ z.object({
      at: /* @__PURE__ */ z.iso.datetime(),
      reason: /* @__PURE__ */ z.enum(["conflict", "not_approved", "revision_unavailable", "scheduler_removed"]),
      detail: /* @__PURE__ */ z.unknown(),
    }),
  ),
  created_at: /* @__PURE__ */ z.iso.datetime(),
  updated_at: /* @__PURE__ */ z.iso.datetime(),
};

/** A split request's apply with `?dry_run=true` (docs/SPLITS.md §1): the split it would start or change. */
export const SplitRequestDryRun = /* @__PURE__ */ z
  .object({
    dry_run: z.literal(true),
    app_id: z.uuid(),
    environment: z.string(),
    kind: z.literal("split"),
    split: z.extend(SplitChangeFields, {
      starts: z
        .boolean()
        .apply(
          /* @__PURE__ */ documented(
            globalThis.DOCUMENTATION && { description: "True: it would start a split; false: change the running one's" },
          ),
        ),
    }),
    current: DeploymentPreviewOutput.shape.current.apply(
      /* @__PURE__ */ documented(
        globalThis.DOCUMENTATION && { description: "The split's base: what the environment runs now, and keeps (no deploy)" },
      ),
    ),
    proposed: DeploymentPreviewOutput.shape.proposed.apply(
      /* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "The split's candidate" }),
    ),
    diff: DeploymentPreviewOutput.shape.diff,
  })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "SplitRequestDryRun"));
export type SplitRequestDryRun = z.infer<typeof SplitRequestDryRun>;

export const ChangeRequest = /* @__PURE__ */ z
  .object({
    ...ChangeRequestFields,
    reviews: z.array(Review),
    ...ChangeRequestTail,
    verdict_secret: z.optional(z.string()).apply(
      /* @__PURE__ */ documented(
        globalThis.DOCUMENTATION && {
          description:
            "Only in the answer of the apply that started a split (and its Idempotency-Key's replay while it runs): its verdict secret",
        },
      ),
    ),
  })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "ChangeRequest"));
export type ChangeRequest = z.output<typeof ChangeRequest>;

/** A request as a list shows it: without its reviews. */
export const ChangeRequestSummary = /* @__PURE__ */ z
  .object({ ...ChangeRequestFields, ...ChangeRequestTail })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "ChangeRequestSummary"));
export type ChangeRequestSummary = z.output<typeof ChangeRequestSummary>;

export const ChangeRequestPage = /* @__PURE__ */ z.object({
  change_requests: /* @__PURE__ */ z.array(ChangeRequestSummary),
  next_cursor: /* @__PURE__ */ z.nullable(/* @__PURE__ */ z.uuid()).apply(
    /* @__PURE__ */ documented(
      globalThis.DOCUMENTATION && {
        description: "Pass as `cursor` for the next page; null: the last page",
      },
    ),
  ),
});

const ConfigDocumentSchema = /* @__PURE__ */ z
  .nullable(
    /* @__PURE__ */ z.object({
      config_name: /* @__PURE__ */ z.string(),
      params: /* @__PURE__ */ z.record(/* @__PURE__ */ z.string(), /* @__PURE__ */ z.unknown()),
      url: /* @__PURE__ */ z.string(),
    }),
  )
  .apply(
    /* @__PURE__ */ documented(
      globalThis.DOCUMENTATION && {
        description: "What the revision deploys (null: nothing deployed)",
      },
    ),
  );

const EnvironmentSide = /* @__PURE__ */ z.object({
  environment_revision: /* @__PURE__ */ z.int(),
  environment_revision_id: /* @__PURE__ */ z.nullable(/* @__PURE__ */ z.uuid()),
  variant_revision_id: /* @__PURE__ */ z.nullable(/* @__PURE__ */ z.uuid()),
  config_name: /* @__PURE__ */ z.nullable(/* @__PURE__ */ z.string()),
  revision: /* @__PURE__ */ z.nullable(/* @__PURE__ */ z.int()),
  document: ConfigDocumentSchema,
});

const Operation = /* @__PURE__ */ z.object({
  op: /* @__PURE__ */ z.enum(["add", "remove", "replace"]),
  path: /* @__PURE__ */ z.string(),
  value: /* @__PURE__ */ z.optional(/* @__PURE__ */ z.unknown()),
});

/** A diff's answer (docs/CHANGE-REQUESTS.md §5's `identical`, `coarse`, `patch`, `changes`). */
export const DocumentDiffSchema = /* @__PURE__ */ z.object({
  identical: /* @__PURE__ */ z.boolean(),
  coarse: /* @__PURE__ */ z.boolean(),
  patch: /* @__PURE__ */ z.array(Operation),
  changes: /* @__PURE__ */ z.array(
    /* @__PURE__ */ z.object({
      path: /* @__PURE__ */ z.string(),
      op: /* @__PURE__ */ z.enum(["add", "remove", "replace"]),
      from: /* @__PURE__ */ z.unknown(),
      to: /* @__PURE__ */ z.unknown(),
    }),
  ),
});

export const ChangeRequestDiff = /* @__PURE__ */ z
  .object({
    base: EnvironmentSide.apply(
      /* @__PURE__ */ documented(
        globalThis.DOCUMENTATION && {
          description: "The environment at the request's base",
        },
      ),
    ),
    current: EnvironmentSide.apply(
      /* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "The environment now" }),
    ),
    proposed: z.object({
      variant_revision_id: z.uuid(),
      config_name: z.string(),
      revision: z.int(),
      document: ConfigDocumentSchema,
    }),
    base_is_current: z.boolean().apply(
      /* @__PURE__ */ documented(
        globalThis.DOCUMENTATION && {
          description: "The environment has not changed since the base",
        },
      ),
    ),
    diff: DocumentDiffSchema.apply(
      /* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "From current to proposed" }),
    ),
    drift: DocumentDiffSchema.apply(
      /* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "From base to current" }),
    ),
  })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "ChangeRequestDiff"));
export type ChangeRequestDiff = z.output<typeof ChangeRequestDiff>;

const ETAG = /^"([0-9a-f-]{36})\.([1-9][0-9]{0,8})"$/;

/**
 * The write count an If-Match names for request `id`: null for none or `*`; a tag of another request, or not one of
 * ours, names a count no request has (0), so that the write is refused (412).
 */
export function expectedWrites(ifMatch: string | undefined, id: string): number | null {
  if (ifMatch === undefined || ifMatch.trim() === "*") return null;
  const tag = ETAG.exec(ifMatch.trim());
  return tag && tag[1] === id ? Number(tag[2]) : 0;
}

const demoUser = { user_id: DEMO_USER_ID, username: "demo" };

/** The documented example of a request (made by a pure call: unused in the Worker, it is dropped from it). */
export const DEMO_CHANGE_REQUEST = /* @__PURE__ */ (() => ({
  id: "01a2012d-8a10-7c3e-9a51-0c4f1e2d3b40",
  app_id: DEMO_APP_ID,
  app_name: "demo-app",
  environment: "production",
  project_id: DEMO_PROJECT_ID,
  kind: "deploy",
  variant_revision_id: EXAMPLE_VARIANT_REVISION_ID,
  split: null,
  config_name: "main",
  revision: 3,
  revert_to_revision_id: null,
  base: {
    environment_revision: 4,
    environment_revision_id: EXAMPLE_ENVIRONMENT_REVISION_ID,
    variant_revision_id: null,
  },
  title: "Lower temperature",
  description: "",
  state: "open",
  version: 1,
  approvals: 0,
  approvals_required: 2,
  author: demoUser,
  reviewers: [{ user_id: "01a2012d-8a12-7c3e-9a51-0c4f1e2d3b42", username: "kim" }],
  reviews: [
    {
      id: "01a2012d-8a11-7c3e-9a51-0c4f1e2d3b41",
      kind: "comment",
      comment: "Checked on staging.",
      version: 1,
      stale: false,
      reviewer: demoUser,
      created_at: "2026-11-22T03:10:00.000Z",
    },
  ],
  scheduled_at: null,
  expires_at: "2026-12-06T03:00:00.000Z",
  applied: null,
  failure: null,
  created_at: "2026-11-22T03:00:00.000Z",
  updated_at: "2026-11-22T03:10:00.000Z",
}))() satisfies ChangeRequest;

const demoDocument = (temperature: number) => ({
  config_name: "main",
  params: { model: "gpt-4o-mini", temperature },
  url: "",
});

/** The documented example of a request's diff (dropped from the Worker, as DEMO_CHANGE_REQUEST). */
export const DEMO_DIFF = /* @__PURE__ */ (() => ({
  base: {
    environment_revision: 4,
    environment_revision_id: EXAMPLE_ENVIRONMENT_REVISION_ID,
    variant_revision_id: "01a2012d-89b1-72d5-889a-f5c51767a9f3",
    config_name: "main",
    revision: 2,
    document: demoDocument(0.7),
  },
  current: {
    environment_revision: 4,
    environment_revision_id: EXAMPLE_ENVIRONMENT_REVISION_ID,
    variant_revision_id: "01a2012d-89b1-72d5-889a-f5c51767a9f3",
    config_name: "main",
    revision: 2,
    document: demoDocument(0.7),
  },
  proposed: {
    variant_revision_id: EXAMPLE_VARIANT_REVISION_ID,
    config_name: "main",
    revision: 3,
    document: demoDocument(0.2),
  },
  base_is_current: true,
  diff: {
    identical: false,
    coarse: false,
    patch: [{ op: "replace", path: "/params/temperature", value: 0.2 }],
    changes: [{ path: "/params/temperature", op: "replace", from: 0.7, to: 0.2 }],
  },
  drift: { identical: true, coarse: false, patch: [], changes: [] },
}))() satisfies ChangeRequestDiff;
