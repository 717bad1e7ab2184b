import { useState } from "preact/hooks";
import { answer, answered, type Schemas } from "../api";
import { answerExact, configById, configOfDeploy, DiffView, versionById } from "../diff-view";
import { formatExact, readableString } from "../exact-json";
import { ReviewerPicker } from "../reviewers";
import { Link, navigate, type PageProps } from "../router";
import { deployName, protectionOf, versionName } from "../runs";
import { usePermissions, useSession } from "../session";
import { proposedSplit, share } from "../split-panel";
import { ActionButton, ErrorNote, Loading, useAction, useLoad } from "../ui";
import { ENVIRONMENTS, type EnvironmentName } from "./change-requests";

/**
 * 6. Proposing a change request: a deploy of a config revision (`?variant_revision_id=`), or a revert of an
 * environment to an earlier revision of it (`?environment=&revert_to_revision_id=`), after a preview of what it would
 * change there now. A split of the environment to that config revision (`&split=<weight>&steps=<weight>:<minutes>,…
 * &promote_at_end=true`, kind `split`), or the promote of its split's candidate (`&end_split=promote`, kind
 * `promote`), previewed as its deploy would be: the base against the candidate.
 */
export const path = "/apps/:appId/propose";

type Diff = Schemas["ConfigDiff"] | Schemas["EnvironmentDiff"];

export default function Propose({ params: { appId }, query }: PageProps) {
  const { api, profile, readOnly } = useSession();
  const revertTo = query.get("revert_to_revision_id") ?? undefined;
  const variantRevisionId = revertTo ? undefined : (query.get("variant_revision_id") ?? undefined);
  const split = variantRevisionId ? proposedSplit(query) : undefined;
  const [environment, setEnvironment] = useState<EnvironmentName>(
    (query.get("environment") as EnvironmentName | null) ?? "production",
  );
  const preview = useLoad(async () => {
    const { data: history, response } = await answered(
      api.GET("/apps/{app_id}/revisions/{environment_name}", {
        params: { path: { app_id: appId, environment_name: environment } },
      }),
    );
    const etag = response.headers.get("ETag") ?? undefined;
    const current = history.revisions[history.revisions.length - 1];
    const diff = revertTo
      ? current &&
        (await answerExact<Diff>(
          api.GET("/diff/environments", { params: { query: { from: current.id, to: revertTo } }, parseAs: "text" }),
        ))
      : history.deployed_app_variant_revision_id && variantRevisionId
        ? await answerExact<Diff>(
            api.GET("/diff/configs", {
              params: { query: { from: history.deployed_app_variant_revision_id, to: variantRevisionId } },
              parseAs: "text",
            }),
          )
        : undefined;
    // Nothing deployed there yet: the whole config a deploy would bring, named.
    const first = !diff && variantRevisionId ? await versionById(api, variantRevisionId) : undefined;
    // Who may approve there: the members offered as reviewers.
    const protection = await protectionOf(api, history.project_id, environment);
    return { history, etag, diff, first, protection };
  }, [appId, environment, revertTo, variantRevisionId]);
  const may = usePermissions(preview.data?.history.organization_id);
  // Prefilled from what is proposed until the person types one.
  const [title, setTitle] = useState<string>();
  const [description, setDescription] = useState("");
  const [draft, setDraft] = useState(false);
  const [reviewers, setReviewers] = useState<string[]>([]);
  const action = useAction();

  const propose = async () => {
    const sent = await action.run(async () => {
      const created = await answer(
        api.POST("/change-requests", {
          body: {
            app_id: appId,
            environment,
            ...(revertTo
              ? { revert_to_revision_id: revertTo }
              : split === "promote"
                ? { end_split: "promote" as const }
                : split && variantRevisionId
                  ? { split: { ...split, variant_revision_id: variantRevisionId } }
                  : { variant_revision_id: variantRevisionId }),
            title: shownTitle,
            description,
            reviewers,
            draft,
          },
          // The environment as previewed: if it moved since, the API refuses (412) rather than base it elsewhere.
          params: { header: preview.data?.etag ? { "If-Match": preview.data.etag } : undefined },
        }),
      );
      navigate(`/change-requests/${created.id}`);
    });
    // Refused on a state of the environment no longer current (409, 412): the preview read again, what was typed kept.
    if (!sent) preview.reload();
  };

  if (!revertTo && !variantRevisionId)
    return (
      <p role="alert">
        Nothing to propose: open this page from a revision of a variant or of an environment.{" "}
        <Link to={`/apps/${appId}`}>Back to the app</Link>
      </p>
    );
  if (readOnly) return <p role="alert">This key is read-only: it proposes nothing.</p>;
  const { diff, first } = preview.data ?? {};
  const to = diff?.data.to;
  const from = diff?.data.from;
  const toName = to ? versionName(to.config_name, to.revision) : first && versionName(first.config, first.version);
  const shownTitle =
    title ??
    (revertTo
      ? `Revert ${environment}${to && "environment_revision" in to ? ` to ${deployName(to.environment_revision)} (${toName})` : ""}`
      : split === "promote"
        ? `Promote ${toName ?? "the candidate"} in ${environment}`
        : split
          ? `Split ${environment}: ${toName ?? "a candidate"} at ${share(split.weight)}`
          : `Deploy ${toName ?? "a new version"} to ${environment}`);
  return (
    <>
      <nav aria-label="Breadcrumb">
        <Link to={`/apps/${appId}`}>The app</Link>
      </nav>
      <h1>
        {revertTo
          ? `Propose a revert of ${environment}`
          : split === "promote"
            ? `Propose the promote of ${environment}'s split`
            : split
              ? `Propose a split of ${environment}`
              : "Propose a deploy"}
      </h1>
      <form
        class="stack"
        onSubmit={(event) => {
          event.preventDefault();
          void propose();
        }}
      >
        {!revertTo && !split && (
          <label>
            Environment
            <select
              value={environment}
              onChange={(event) => {
                setEnvironment(event.currentTarget.value as EnvironmentName);
                // Who may approve differs by environment: chosen again there.
                setReviewers([]);
              }}
            >
              {ENVIRONMENTS.map((name) => (
                <option key={name} value={name}>
                  {name}
                </option>
              ))}
            </select>
          </label>
        )}
        <label>
          Title
          <input value={shownTitle} required maxLength={200} onInput={(event) => setTitle(event.currentTarget.value)} />
        </label>
        <label>
          Description (optional)
          <textarea
            value={description}
            maxLength={10000}
            rows={3}
            onInput={(event) => setDescription(event.currentTarget.value)}
          />
        </label>
        {preview.data?.history.organization_id && (
          <ReviewerPicker
            orgId={preview.data.history.organization_id}
            projectId={preview.data.history.project_id}
            protection={preview.data.protection}
            authorId={profile.id}
            chosen={reviewers}
            onChange={setReviewers}
          />
        )}
        <label class="check">
          <input type="checkbox" checked={draft} onChange={(event) => setDraft(event.currentTarget.checked)} />
          Save as a draft (submit it for review later)
        </label>
        {split && split !== "promote" && (
          <p>
            The candidate gets {share(split.weight)} of keyed reads
            {split.steps.map((step) => `, ${share(step.weight)} ${step.after_minutes} minutes later`).join("")}
            {split.promote_at_end ? ", and is promoted at 100%" : ""}.
          </p>
        )}
        <section aria-labelledby="preview-title">
          <h2 id="preview-title">
            Preview: {environment} now
            {toName ? ` → ${toName}` : ""}
          </h2>
          {preview.loading && <Loading label="Loading the preview" />}
          {preview.error && <ErrorNote error={preview.error} />}
          {preview.data && !diff && (
            <>
              <p class="empty">Nothing runs in {environment} yet: the whole config would be deployed.</p>
              {first && <pre class="whole-config">{formatExact(first.whole, "", readableString)}</pre>}
            </>
          )}
          {diff && from && to && (
            <DiffView
              diff={diff.data}
              exact={diff.exact}
              label={`What the proposal would change in ${environment}`}
              sides={{
                before: versionName(from.config_name, from.revision),
                after: versionName(to.config_name, to.revision),
                wholeConfigs: async () =>
                  "environment" in from
                    ? [await configOfDeploy(api, from.id), await configOfDeploy(api, to.id)]
                    : [await configById(api, from.id), await configById(api, to.id)],
              }}
            />
          )}
        </section>
        <ActionButton
          type="submit"
          class="primary"
          permission={may?.("deploy") ?? { state: "hidden" }}
          busy={action.busy || preview.loading}
        >
          {action.busy ? "Proposing…" : draft ? "Save the draft" : "Propose"}
        </ActionButton>
        {action.error && (
          <ErrorNote
            error={action.error}
            prefix={
              action.error.status === 409 || action.error.status === 412
                ? "Refused, the preview is read again and what you typed kept"
                : "Refused"
            }
          />
        )}
      </form>
    </>
  );
}
