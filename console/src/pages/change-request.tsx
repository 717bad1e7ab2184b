import { useState } from "preact/hooks";
import { ApiError, answer, answered, type Schemas } from "../api";
import { ShownOnce } from "../copy";
import { answerExact, configOfDocument, DiffView, exactAt } from "../diff-view";
import { type Done, DoneNote } from "../dry-run";
import { ReviewerPicker } from "../reviewers";
import { Link, type PageProps } from "../router";
import { deployName, liveEverywhereBy, versionName } from "../runs";
import { type Permission, usePermissions, useSession } from "../session";
import { ActionButton, ErrorNote, Loading, Time, useAction, useLoad } from "../ui";
import { type ChangeRequestState, proposalOf } from "./change-requests";

/**
 * 6. A change request: what it would change (its diff; after a conflict, the drift too), its reviews, its approvals
 * against the required number, and the actions its state allows. Every action is sent with the request's ETag as
 * If-Match, so that one taken on a state the page no longer shows is refused (412) with the API's message. Approve and
 * decline are offered to every role that writes: who may approve is the environment's setting at that moment, and the
 * API's refusal (the author's own approval, a role not among the approvers) is shown as it words it.
 */
export const path = "/change-requests/:id";

type ChangeRequest = Schemas["ChangeRequest"];
type Action = "submit" | "apply" | "unschedule" | "rebase" | "cancel";

// docs/CHANGE-REQUESTS.md §3's table: the states each action starts from.
const ACTIONS_FROM: Record<Action | "schedule" | "review" | "edit", ChangeRequestState[]> = {
  edit: ["draft", "open", "approved", "scheduled"],
  submit: ["draft"],
  review: ["open", "approved"],
  apply: ["approved"],
  schedule: ["approved"],
  unschedule: ["scheduled"],
  rebase: ["open", "approved", "scheduled", "failed"],
  cancel: ["draft", "open", "approved", "scheduled", "failed"],
};

export default function ChangeRequestPage({ params: { id } }: PageProps) {
  const { api, profile, readOnly } = useSession();
  const request = { params: { path: { change_request_id: id } } };
  const loaded = useLoad(async () => {
    const { data, response } = await answered(api.GET("/change-requests/{change_request_id}", request));
    const [diff, environment, protection] = await Promise.all([
      answerExact<Schemas["ChangeRequestDiff"]>(
        api.GET("/change-requests/{change_request_id}/diff", { ...request, parseAs: "text" }),
      ),
      answer(
        api.GET("/apps/{app_id}/revisions/{environment_name}", {
          params: { path: { app_id: data.app_id, environment_name: data.environment } },
        }),
      ),
      answer(
        api.GET("/projects/{project_id}/environments/{environment_name}/protection", {
          params: { path: { project_id: data.project_id, environment_name: data.environment } },
        }),
      ),
    ]);
    return { request: data, etag: response.headers.get("ETag") ?? undefined, diff, environment, protection };
  }, [id]);
  const may = usePermissions(loaded.data?.environment.organization_id);

  if (loaded.loading && !loaded.data) return <Loading label="Loading the change request" />;
  if (loaded.error) return <ErrorNote error={loaded.error} />;
  if (!loaded.data || !may) return <Loading label="Loading your role" />;
  const { request: cr, etag, diff, protection } = loaded.data;
  const byAuthor = cr.author.user_id === profile.id;
  const propose = may("deploy");
  // Submit: its author; rebase and cancel: its author, an owner or a workspace admin.
  const submit: Permission = byAuthor ? propose : { state: "disabled", reason: "Only its author may submit it" };
  const asAdmin = may("manage");
  const manage: Permission = byAuthor
    ? propose
    : asAdmin.state === "disabled"
      ? { state: "disabled", reason: "Only its author, an owner or a workspace admin may rebase or cancel it" }
      : asAdmin;
  const headers = { header: etag ? { "If-Match": etag } : undefined };
  // A moved environment is a conflict while the request may still be applied; after, it is history.
  const conflict = !diff.data.base_is_current && ACTIONS_FROM.rebase.includes(cr.state);
  const environmentLink = `/apps/${cr.app_id}/environments/${encodeURIComponent(cr.environment)}`;

  return (
    <>
      <nav aria-label="Breadcrumb">
        <Link to={`/organizations/${loaded.data.environment.organization_id}/change-requests?project_id=${cr.project_id}`}>
          Change requests
        </Link>
      </nav>
      <h1>
        {cr.title} <span class={`state state-${cr.state}`}>{cr.state}</span>
      </h1>
      <dl class="facts">
        <dt>Proposes</dt>
        <dd>
          {proposalOf(cr)} in <Link to={environmentLink}>{cr.environment}</Link> of{" "}
          <Link to={`/apps/${cr.app_id}`}>{cr.app_name}</Link>
        </dd>
        <dt>Approvals</dt>
        <dd>
          {cr.approvals} of {cr.approvals_required} required
          {protection.protected ? ` (${cr.environment} is protected)` : ""}
        </dd>
        <dt>Author</dt>
        <dd>
          {cr.author.username}, <Time at={cr.created_at} />
        </dd>
        <dt>Version</dt>
        <dd>{cr.version}</dd>
        {cr.scheduled_at && (
          <>
            <dt>Scheduled for</dt>
            <dd>
              <Time at={cr.scheduled_at} />
            </dd>
          </>
        )}
        {cr.applied && (
          <>
            <dt>Applied</dt>
            <dd>
              <Time at={cr.applied.at} /> by {cr.applied.by?.username ?? "the scheduler"},{" "}
              {cr.applied.environment_revision === null
                ? "to the split of "
                : `as ${deployName(cr.applied.environment_revision)} of `}
              <Link to={environmentLink}>{cr.environment}</Link>
            </dd>
          </>
        )}
        {cr.failure && (
          <>
            <dt>Failed</dt>
            <dd>
              <Time at={cr.failure.at} />: {cr.failure.reason.replaceAll("_", " ")}
            </dd>
          </>
        )}
        <dt>Expires</dt>
        <dd>
          <Time at={cr.expires_at} />
        </dd>
      </dl>
      {cr.description && <p class="description">{cr.description}</p>}

      <Actions
        cr={cr}
        headers={headers}
        propose={propose}
        submit={submit}
        manage={manage}
        conflict={conflict}
        onDone={loaded.reload}
      />

      <h2>What it would change in {cr.environment} now</h2>
      {conflict && (
        <div class="error" role="alert">
          <strong>Conflict: </strong>
          {cr.environment} changed since this request was made ({deployName(diff.data.base.environment_revision)} then,{" "}
          {deployName(diff.data.current.environment_revision)} now); applying it is refused until it is rebased on{" "}
          {cr.environment} as it is now.
        </div>
      )}
      <DiffView
        diff={diff.data.diff}
        exact={diff.exact.get("diff")}
        label={`From ${cr.environment} now to the proposal`}
        sides={{
          before: `${cr.environment} now, ${sideName(diff.data.current)}`,
          after: `the proposal, ${versionName(diff.data.proposed.config_name, diff.data.proposed.revision)}`,
          wholeConfigs: async () => [
            configOfDocument(exactAt(diff.exact, "current", "document")),
            configOfDocument(exactAt(diff.exact, "proposed", "document")),
          ],
        }}
      />
      {conflict && (
        <>
          <h3>What changed in {cr.environment} since the request was made (the drift)</h3>
          <DiffView
            diff={diff.data.drift}
            exact={diff.exact.get("drift")}
            label={`${cr.environment}: from the base to now`}
            sides={{
              before: `${cr.environment} then, ${sideName(diff.data.base)}`,
              after: `${cr.environment} now, ${sideName(diff.data.current)}`,
              wholeConfigs: async () => [
                configOfDocument(exactAt(diff.exact, "base", "document")),
                configOfDocument(exactAt(diff.exact, "current", "document")),
              ],
            }}
          />
        </>
      )}

      <h2>Reviews</h2>
      <p class="reviewers-asked">
        {cr.reviewers.length === 0
          ? "No review asked of anyone."
          : `Review asked of ${cr.reviewers.map((reviewer) => reviewer.username).join(", ")}.`}
      </p>
      {byAuthor && ACTIONS_FROM.edit.includes(cr.state) && propose.state !== "hidden" && (
        <ReviewersEdit
          cr={cr}
          orgId={loaded.data.environment.organization_id as string}
          protection={protection}
          headers={headers}
          permission={propose}
          onDone={loaded.reload}
        />
      )}
      {cr.reviews.length === 0 && <p class="empty">No review yet.</p>}
      <ol class="reviews">
        {cr.reviews.map((review) => (
          <li key={review.id} class={review.stale ? "stale" : undefined}>
            <strong>{review.reviewer.username}</strong> {REVIEW_WORDS[review.kind]} version {review.version}
            {review.stale && " (stale: the proposal changed since, so it counts for nothing)"}, <Time at={review.created_at} />
            {review.comment && <blockquote>{review.comment}</blockquote>}
          </li>
        ))}
      </ol>
      {ACTIONS_FROM.review.includes(cr.state) && (
        <ReviewForm
          cr={cr}
          headers={headers}
          approve={readOnly ? { state: "hidden" } : { state: "allowed" }}
          comment={propose}
          onDone={loaded.reload}
        />
      )}
    </>
  );
}

const REVIEW_WORDS = { approve: "approved", decline: "declined", comment: "commented on" } as const;

/** An environment at a request's base or now: its deploy and what it runs. */
const sideName = (side: Schemas["ChangeRequestDiff"]["current"]) =>
  `${deployName(side.environment_revision)} (${versionName(side.config_name, side.revision)})`;

/** Whether an action's refusal means the page showed a state no longer current: then it is read again. */
const isStale = (error: unknown) => error instanceof ApiError && (error.status === 409 || error.status === 412);

/** Runs `write`; then, done or refused on a state no longer current, `reload`: what the page holds typed stays. */
async function runThenReload(action: ReturnType<typeof useAction>, write: () => Promise<unknown>, reload: () => void) {
  let stale = false;
  const done = await action.run(() =>
    write().catch((error: unknown) => {
      stale = isStale(error);
      throw error;
    }),
  );
  if (done || stale) reload();
  return done;
}

type Headers = { header: { "If-Match": string } | undefined };

/** The author's choice of reviewers, replaced whole (PATCH); refused on a request changed since, it is read again. */
function ReviewersEdit({
  cr,
  orgId,
  protection,
  headers,
  permission,
  onDone,
}: {
  cr: ChangeRequest;
  orgId: string;
  protection: Schemas["Protection"];
  headers: Headers;
  permission: Permission;
  onDone: () => void;
}) {
  const { api } = useSession();
  const action = useAction();
  const [chosen, setChosen] = useState(cr.reviewers.map((reviewer) => reviewer.user_id));
  const save = () =>
    runThenReload(
      action,
      () =>
        answer(
          api.PATCH("/change-requests/{change_request_id}", {
            params: { path: { change_request_id: cr.id }, ...headers },
            body: { reviewers: chosen },
          }),
        ),
      onDone,
    );
  return (
    <details class="edit-reviewers">
      <summary>Change who is asked to review</summary>
      <ReviewerPicker
        orgId={orgId}
        projectId={cr.project_id}
        protection={protection}
        authorId={cr.author.user_id}
        chosen={chosen}
        onChange={setChosen}
      />
      <ActionButton permission={permission} busy={action.busy} onClick={() => void save()}>
        Save the reviewers
      </ActionButton>
      {action.error && <ErrorNote error={action.error} prefix="Refused" />}
    </details>
  );
}

function Actions({
  cr,
  headers,
  propose,
  submit,
  manage,
  conflict,
  onDone,
}: {
  cr: ChangeRequest;
  headers: Headers;
  propose: Permission;
  submit: Permission;
  manage: Permission;
  conflict: boolean;
  onDone: () => void;
}) {
  const { api } = useSession();
  const action = useAction();
  const [when, setWhen] = useState("");
  const [applied, setApplied] = useState<Done>();
  // The verdict secret of a split this apply started: in its answer only, shown this once.
  const [secret, setSecret] = useState<string>();
  const path = { change_request_id: cr.id };
  const act = async (name: Action) => {
    let answer: { data: object; response: Response } | undefined;
    const done = await runThenReload(
      action,
      async () => {
        answer = await answered(api.POST(`/change-requests/{change_request_id}/${name}`, { params: { path, ...headers } }));
      },
      onDone,
    );
    if (done && name === "apply" && answer) {
      setApplied({ text: `Applied to ${cr.environment}.`, liveBy: liveEverywhereBy(answer.response) });
      if ("verdict_secret" in answer.data) setSecret(String(answer.data.verdict_secret));
    }
  };
  const schedule = async () => {
    await runThenReload(
      action,
      () =>
        answer(
          api.POST("/change-requests/{change_request_id}/schedule", {
            params: { path, ...headers },
            body: { scheduled_at: new Date(when).toISOString() },
          }),
        ),
      onDone,
    );
  };
  // In conflict, applying is refused until a rebase: Apply disabled with the reason, Rebase the main action.
  const apply: Permission =
    conflict && propose.state !== "hidden"
      ? { state: "disabled", reason: `${cr.environment} changed since this request was made: rebase it first` }
      : propose;
  const button = (name: Action, label: string, permission: Permission, className?: string) =>
    ACTIONS_FROM[name].includes(cr.state) && (
      <ActionButton permission={permission} busy={action.busy} class={className} onClick={() => void act(name)}>
        {label}
      </ActionButton>
    );
  return (
    <fieldset class="actions">
      <legend class="visually-hidden">Actions</legend>
      {button("submit", "Submit for review", submit, "primary")}
      {conflict && button("rebase", `Rebase on ${cr.environment} now`, manage, "primary")}
      {button("apply", `Apply to ${cr.environment}`, apply, conflict ? undefined : "primary")}
      {conflict && apply.state === "disabled" && (
        <span class="help" id="apply-reason">
          {apply.reason}
        </span>
      )}
      {button("unschedule", "Unschedule", propose)}
      {!conflict && button("rebase", `Rebase on ${cr.environment} now`, manage)}
      {button("cancel", "Cancel the request", manage, "danger")}
      {ACTIONS_FROM.schedule.includes(cr.state) && propose.state !== "hidden" && (
        <form
          class="inline-form"
          onSubmit={(event) => {
            event.preventDefault();
            void schedule();
          }}
        >
          <label>
            Apply at (your time zone)
            <input type="datetime-local" required value={when} onInput={(event) => setWhen(event.currentTarget.value)} />
          </label>
          <ActionButton type="submit" permission={propose} busy={action.busy}>
            Schedule
          </ActionButton>
        </form>
      )}
      {action.busy && <Loading label="Sending" />}
      {applied && <DoneNote done={applied} />}
      {secret && <ShownOnce label="The split's verdict secret: your evaluation signs its verdicts with it." secret={secret} />}
      {action.error && (
        <ErrorNote error={action.error} prefix={isStale(action.error) ? "Refused, the request is read again" : "Refused"} />
      )}
    </fieldset>
  );
}

function ReviewForm({
  cr,
  headers,
  approve,
  comment,
  onDone,
}: {
  cr: ChangeRequest;
  headers: Headers;
  approve: Permission;
  comment: Permission;
  onDone: () => void;
}) {
  const { api } = useSession();
  const action = useAction();
  const [text, setText] = useState("");
  if (approve.state === "hidden") return null;
  const review = async (kind: "approve" | "decline" | "comment") => {
    // Refused on a version no longer current (409, 412), the request is read again and the comment typed kept.
    const done = await runThenReload(
      action,
      () =>
        answer(
          api.POST("/change-requests/{change_request_id}/reviews", {
            params: { path: { change_request_id: cr.id }, ...headers },
            // Bound to the version shown: a review of a proposal changed since is refused (409 stale_version).
            body: { kind, version: cr.version, ...(text.trim() ? { comment: text.trim() } : {}) },
          }),
        ),
      onDone,
    );
    if (done) setText("");
  };
  return (
    <form class="stack" aria-label="Review" onSubmit={(event) => event.preventDefault()}>
      <label>
        Comment (optional with an approval or a decline)
        <textarea value={text} rows={3} maxLength={5000} onInput={(event) => setText(event.currentTarget.value)} />
      </label>
      <div class="row">
        <ActionButton permission={approve} busy={action.busy} class="primary" onClick={() => void review("approve")}>
          Approve
        </ActionButton>
        <ActionButton permission={approve} busy={action.busy} class="danger" onClick={() => void review("decline")}>
          Decline
        </ActionButton>
        <ActionButton
          permission={text.trim() ? comment : { state: "disabled", reason: "Write a comment first" }}
          busy={action.busy}
          onClick={() => void review("comment")}
        >
          Comment
        </ActionButton>
      </div>
      {action.error && (
        <ErrorNote
          error={action.error}
          prefix={isStale(action.error) ? "Refused, the request is read again and your comment kept" : "Refused"}
        />
      )}
    </form>
  );
}
