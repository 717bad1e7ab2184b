import { useState } from "preact/hooks";
import { type Api, ApiError, answer, answered, type Schemas } from "./api";
import { ShownOnce } from "./copy";
import { answerExact, configById, DiffView } from "./diff-view";
import { navigate } from "./router";
import { versionName } from "./runs";
import type { Permission } from "./session";
import { ActionButton, ErrorNote, Loading, Time, useAction, useLoad } from "./ui";
import { useVersionPick, type VariantVersions, VersionPicker } from "./version-picker";

/*
 * An environment's split (docs/SPLITS.md §4): its base and candidate with their diff, its weight, next step, hold and
 * last verdict; start, change, promote and abort. On a protected environment a start, a change or a promote opens
 * the proposal of a change request (kind `split` or `promote`) prefilled; an abort stays direct, as the API has it.
 * The verdict secret of a split started here is shown this once.
 */

export type Split = Schemas["Split"];
type Step = Split["steps"][number];
/** A start or a change: weight and steps in basis points, as the API takes them. */
export interface SplitChange {
  weight: number;
  steps: Step[];
  promote_at_end: boolean;
}

/** The environment's running split, or null: the API answers 404 "No split" when none runs. */
export async function splitOf(api: Api, appId: string, environment: string): Promise<Split | null> {
  try {
    return await answer(
      api.GET("/apps/{app_id}/environments/{environment}/split", { params: { path: { app_id: appId, environment } } }),
    );
  } catch (refused) {
    if (refused instanceof ApiError && refused.status === 404) return null;
    throw refused;
  }
}

/** Basis points as a share: 1000 → "10%". */
export const share = (weight: number) => `${weight / 100}%`;

/** A deploy's or revert's control while a split runs: disabled, saying why the API would refuse it (409 split_running). */
export const whileSplit = (split: Split | null | undefined, environment: string, permission: Permission): Permission =>
  split && permission.state !== "hidden"
    ? { state: "disabled", reason: `A split runs in ${environment}: promote or abort it before a deploy or revert` }
    : permission;

/** The proposal page of a split start or change (`change`), or of the promote of the candidate (no `change`). */
export function proposalPath(appId: string, environment: string, candidateId: string, change?: SplitChange) {
  const query = new URLSearchParams({ environment, variant_revision_id: candidateId });
  if (change) {
    query.set("split", String(change.weight));
    if (change.steps.length) query.set("steps", change.steps.map((step) => `${step.weight}:${step.after_minutes}`).join(","));
    if (change.promote_at_end) query.set("promote_at_end", "true");
  } else query.set("end_split", "promote");
  return `/apps/${appId}/propose?${query}`;
}

/** What a proposal page's query proposes of a split: a start or change, a promote, or neither. */
export function proposedSplit(query: URLSearchParams): SplitChange | "promote" | undefined {
  if (query.get("end_split") === "promote") return "promote";
  const weight = query.get("split");
  if (weight === null) return undefined;
  const steps = (query.get("steps") ?? "")
    .split(",")
    .filter(Boolean)
    .map((step) => {
      const [stepWeight, minutes] = step.split(":").map(Number);
      return { weight: stepWeight, after_minutes: minutes };
    });
  return { weight: Number(weight), steps, promote_at_end: query.get("promote_at_end") === "true" };
}

export function SplitPanel({
  api,
  appId,
  environment,
  split,
  isProtected,
  candidates,
  permission,
  onChanged,
}: {
  api: Api;
  appId: string;
  environment: string;
  split: Split | null;
  isProtected: boolean;
  candidates: VariantVersions;
  permission: Permission;
  onChanged: () => void;
}) {
  const [editing, setEditing] = useState(false);
  const [secret, setSecret] = useState<string>();
  const action = useAction();
  const path = { params: { path: { app_id: appId, environment } } };
  const done = () => {
    setEditing(false);
    onChanged();
  };
  const put = (body: Schemas["PutSplit"]) =>
    action.run(async () => {
      const started = await answer(api.PUT("/apps/{app_id}/environments/{environment}/split", { ...path, body }));
      if ("verdict_secret" in started && started.verdict_secret) setSecret(started.verdict_secret);
      done();
    });
  const end = (outcome: "promote" | "abort") =>
    action.run(async () => {
      await answered(
        api.DELETE("/apps/{app_id}/environments/{environment}/split", {
          params: { ...path.params, query: { outcome } },
        }),
      );
      done();
    });
  // A start names its candidate; a change keeps the running split's.
  const submit = (change: SplitChange, candidateId: string) =>
    isProtected
      ? navigate(proposalPath(appId, environment, candidateId, change))
      : void put(split ? change : { ...change, candidate: { variant_ref: { id: candidateId } } });

  return (
    <section class="split" aria-labelledby="split-title">
      <h2 id="split-title">Split</h2>
      {secret && <ShownOnce label="The split's verdict secret: your evaluation signs its verdicts with it." secret={secret} />}
      {split ? <RunningSplit api={api} split={split} /> : <p class="empty">No split runs in {environment}.</p>}
      {permission.state !== "hidden" &&
        (editing ? (
          <SplitForm
            candidates={split ? undefined : candidates}
            initial={split ?? undefined}
            submitLabel={`${isProtected ? "Propose" : split ? "Change" : "Start"} the split${isProtected ? "…" : ""}`}
            permission={permission}
            busy={action.busy}
            onSubmit={(change, candidateId) => submit(change, split?.candidate.variant_revision_id ?? candidateId)}
            onCancel={() => setEditing(false)}
          />
        ) : (
          <div class="row">
            <ActionButton permission={permission} onClick={() => setEditing(true)}>
              {split ? "Change its weight and steps…" : "Start a split…"}
            </ActionButton>
            {split && (
              <>
                <ActionButton
                  permission={permission}
                  busy={action.busy}
                  class="primary"
                  onClick={() =>
                    isProtected
                      ? navigate(proposalPath(appId, environment, split.candidate.variant_revision_id))
                      : void end("promote")
                  }
                >
                  {isProtected ? "Propose the promote…" : "Promote the candidate"}
                </ActionButton>
                <ActionButton permission={permission} busy={action.busy} class="danger" onClick={() => void end("abort")}>
                  Abort: back to the base
                </ActionButton>
              </>
            )}
          </div>
        ))}
      {split && isProtected && permission.state !== "hidden" && (
        <p class="help">{environment} is protected: a change or a promote is proposed as a change request; an abort is direct.</p>
      )}
      {action.error && <ErrorNote error={action.error} prefix="Refused" />}
    </section>
  );
}

/** What a running split is: its sides and their diff, its weight, next step, hold and last verdict. */
function RunningSplit({ api, split }: { api: Api; split: Split }) {
  const base = versionName(split.base.config_name, split.base.revision);
  const candidate = versionName(split.candidate.config_name, split.candidate.revision);
  const [next] = split.steps;
  const verdict = split.last_verdict;
  const diff = useLoad(
    () =>
      answerExact<Schemas["ConfigDiff"]>(
        api.GET("/diff/configs", {
          params: { query: { from: split.base.variant_revision_id, to: split.candidate.variant_revision_id } },
          parseAs: "text",
        }),
      ),
    [split.base.variant_revision_id, split.candidate.variant_revision_id],
  );
  return (
    <>
      <dl class="facts">
        <dt>Base</dt>
        <dd>{base}</dd>
        <dt>Candidate</dt>
        <dd>{candidate}</dd>
        <dt>Weight</dt>
        <dd>{share(split.weight)} of keyed reads get the candidate</dd>
        <dt>Next step</dt>
        <dd>
          {next ? (
            <>
              {share(next.weight)} at <Time at={split.next_step_at} />
              {split.steps.length > 1
                ? `, then ${split.steps
                    .slice(1)
                    .map((step) => share(step.weight))
                    .join(", ")}`
                : ""}
            </>
          ) : (
            "none"
          )}
          {split.promote_at_end ? "; promoted at 100%" : ""}
        </dd>
        <dt>Held</dt>
        <dd>{split.held ? "yes: its steps wait for a resume verdict or a change" : "no"}</dd>
        <dt>Last verdict</dt>
        <dd>
          {verdict ? (
            <>
              {verdict.verdict}: “{verdict.reason}”, <Time at={verdict.at} />
            </>
          ) : (
            "none yet"
          )}
        </dd>
        <dt>Started</dt>
        <dd>
          <Time at={split.started_at} /> by {split.started_by.username}
        </dd>
      </dl>
      <h3>What the candidate changes</h3>
      {diff.loading && !diff.data && <Loading label="Loading the diff" />}
      {diff.error && <ErrorNote error={diff.error} />}
      {diff.data && (
        <DiffView
          diff={diff.data.data}
          exact={diff.data.exact}
          label={`The candidate ${candidate} against the base ${base}`}
          sides={{
            before: base,
            after: candidate,
            wholeConfigs: async () => [
              await configById(api, split.base.variant_revision_id),
              await configById(api, split.candidate.variant_revision_id),
            ],
          }}
        />
      )}
    </>
  );
}

/** A step as typed: a share in percent and minutes, as text until sent. */
type TypedStep = { share: string; minutes: string };

const basisPoints = (percent: string) => Math.round(Number(percent) * 100);

/** A start (with `candidates`, to pick one from) or a change of the running split (`initial`). */
function SplitForm({
  candidates,
  initial,
  submitLabel,
  permission,
  busy,
  onSubmit,
  onCancel,
}: {
  candidates?: VariantVersions;
  initial?: SplitChange;
  submitLabel: string;
  permission: Permission;
  busy: boolean;
  onSubmit: (change: SplitChange, candidateId: string) => void;
  onCancel: () => void;
}) {
  const pick = useVersionPick(candidates ?? []);
  const { version } = pick;
  const [weight, setWeight] = useState(initial ? String(initial.weight / 100) : "10");
  const [steps, setSteps] = useState<TypedStep[]>(
    initial?.steps.map((step) => ({ share: String(step.weight / 100), minutes: String(step.after_minutes) })) ?? [],
  );
  const [promoteAtEnd, setPromoteAtEnd] = useState(initial?.promote_at_end ?? false);
  const setStep = (index: number, typed: Partial<TypedStep>) =>
    setSteps(steps.map((step, i) => (i === index ? { ...step, ...typed } : step)));
  return (
    <form
      class="stack"
      aria-label={candidates ? "Start a split" : "Change the split"}
      onSubmit={(event) => {
        event.preventDefault();
        onSubmit(
          {
            weight: basisPoints(weight),
            steps: steps.map((step) => ({ weight: basisPoints(step.share), after_minutes: Number(step.minutes) })),
            promote_at_end: promoteAtEnd,
          },
          version?.id ?? "",
        );
      }}
    >
      {pick.chosen && (
        <div class="inline-form">
          <VersionPicker pick={pick} variantLabel="Candidate variant" />
        </div>
      )}
      <label>
        Weight: the candidate's share of keyed reads (%)
        <input
          type="number"
          min={0}
          max={100}
          step={0.01}
          required
          value={weight}
          onInput={(e) => setWeight(e.currentTarget.value)}
        />
      </label>
      <fieldset>
        <legend>Steps (optional): each share applies its minutes after the one before</legend>
        {steps.map((step, i) => (
          <div class="inline-form" key={i}>
            <label>
              Step {i + 1} (%)
              <input
                type="number"
                min={0}
                max={100}
                step={0.01}
                required
                value={step.share}
                onInput={(e) => setStep(i, { share: e.currentTarget.value })}
              />
            </label>
            <label>
              Step {i + 1} after (minutes)
              <input
                type="number"
                min={1}
                max={10080}
                required
                value={step.minutes}
                onInput={(e) => setStep(i, { minutes: e.currentTarget.value })}
              />
            </label>
            <button type="button" onClick={() => setSteps(steps.filter((_, j) => j !== i))}>
              Remove step {i + 1}
            </button>
          </div>
        ))}
        {steps.length < 10 && (
          <button type="button" onClick={() => setSteps([...steps, { share: "", minutes: "60" }])}>
            Add a step
          </button>
        )}
      </fieldset>
      <label class="check">
        <input type="checkbox" checked={promoteAtEnd} onChange={(e) => setPromoteAtEnd(e.currentTarget.checked)} />
        Promote the candidate when a step reaches 100%
      </label>
      <div class="row">
        <ActionButton type="submit" class="primary" permission={permission} busy={busy}>
          {submitLabel}
        </ActionButton>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
