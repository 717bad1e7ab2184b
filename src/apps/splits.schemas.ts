import * as z from "zod/mini";
import { documented, schemaName } from "../http/documentation";
import { nameField, queryFlag, uuid } from "../http/fields";
import { variantRef } from "../variants/configs.schemas";

/** The path of an environment's split. */
export const SplitParams = /* @__PURE__ */ z.object({ app_id: uuid, environment: nameField("environment") });

const weight = /* @__PURE__ */ z
  .int()
  .check(z.gte(0), z.lte(10000))
  .apply(/* @__PURE__ */ documented(globalThis.DOCUMENTATION && { description: "Basis points sent to the candidate" }));

const Step = /* @__PURE__ */ z.strictObject({
  weight,
  after_minutes: z.int().check(z.gte(1), z.lte(10080)),
});

const risingSteps = /* @__PURE__ */ z.refine<{ weight: number; steps?: { weight: number }[] }>(
  ({ weight: start, steps = [] }) => steps.every((step, i) => step.weight > (i === 0 ? start : steps[i - 1].weight)),
  { message: "steps' weights must rise, each above the one before (the first above weight)", path: ["steps"] },
);

/** PUT …/split: a split started (with `candidate`) or a running one's weight and steps changed. */
export const PutSplitBody = /* @__PURE__ */ z
  .strictObject({
    candidate: z.optional(
      z.strictObject({ variant_ref: variantRef.check(z.refine((ref) => ref !== null, "variant_ref needs a slug or an id")) }),
    ),
    weight,
    steps: z.optional(z.array(Step).check(z.maxLength(10))),
    promote_at_end: z.optional(z.boolean()),
    salt: z.optional(z.string().check(z.minLength(1), z.maxLength(64))),
  })
  .check(risingSteps);

const splitFields = {
  weight,
  steps: /* @__PURE__ */ z.optional(z.array(Step).check(z.maxLength(10))),
  promote_at_end: /* @__PURE__ */ z.optional(z.boolean()),
};

/** A change request's `split` (docs/SPLITS.md §1): a start (the candidate by its revision's id) or a change. */
export const SplitProposal = /* @__PURE__ */ z.strictObject({ variant_revision_id: uuid, ...splitFields }).check(risingSteps);

/** A split request's edit of its `split`: its weight, steps and promote_at_end, the candidate kept. */
export const SplitEdit = /* @__PURE__ */ z.strictObject(splitFields).check(risingSteps);

/** A split change request's fields, as its answer shows them. */
export const SplitChangeFields = /* @__PURE__ */ z.object({ weight: z.int(), steps: z.array(Step), promote_at_end: z.boolean() });

export const SplitWriteQuery = /* @__PURE__ */ z.object({ dry_run: queryFlag });

export const EndSplitQuery = /* @__PURE__ */ z.object({ outcome: z.enum(["promote", "abort"]), dry_run: queryFlag });

const Revision = /* @__PURE__ */ z.object({ variant_revision_id: z.string(), config_name: z.string(), revision: z.int() });
const User = /* @__PURE__ */ z.object({ user_id: z.string(), username: z.string() });

/** A running split as GET …/split answers it; a start adds `verdict_secret`, an end `outcome`. */
export const SplitOutput = /* @__PURE__ */ z
  .object({
    id: z.string(),
    environment: z.string(),
    base: z.extend(Revision, { environment_revision: z.int(), environment_revision_id: z.string() }),
    candidate: Revision,
    weight: z.int(),
    salt: z.string(),
    steps: z.array(Step),
    next_step_at: z.nullable(z.string()),
    promote_at_end: z.boolean(),
    held: z.boolean(),
    last_verdict: z.nullable(z.object({ verdict: z.string(), reason: z.string(), at: z.string() })),
    started_at: z.string(),
    started_by: User,
    changes: z.array(
      z.object({
        at: z.string(),
        from: z.int(),
        to: z.int(),
        by: z.enum(["user", "schedule", "verdict"]),
        user: z.nullable(User),
      }),
    ),
    verdict_secret: z.optional(
      z.string().apply(
        /* @__PURE__ */ documented(
          globalThis.DOCUMENTATION && {
            description: "Only when a split starts (and to its Idempotency-Key's replay while it runs): signs its verdicts",
          },
        ),
      ),
    ),
    outcome: z.optional(z.enum(["promote", "abort"])),
    environment_revision_id: z.optional(z.nullable(z.string())),
  })
  .apply(/* @__PURE__ */ schemaName(globalThis.DOCUMENTATION && "Split"));
export type SplitOutput = z.infer<typeof SplitOutput>;

/** A split write's dry-run: what it would do, the split as it is now (null: none yet). */
export const SplitDryRunOutput = /* @__PURE__ */ z.object({
  dry_run: z.literal(true),
  kind: z.enum(["start", "change", "promote", "abort"]),
  app_id: z.string(),
  environment: z.string(),
  split: z.nullable(SplitOutput),
});
