import { useState } from "preact/hooks";
import { answer, type Schemas } from "../api";
import { Link, navigate, type PageProps } from "../router";
import { versionName } from "../runs";
import { useSession } from "../session";
import { ActionButton, ErrorNote, Loading, Time, useAction, useLoad } from "../ui";

/** 6. Change requests: a project's, newest first, filtered by state, environment and app (GET /change-requests). */
export const path = "/organizations/:orgId/change-requests";

export type ChangeRequestState = Schemas["ChangeRequestSummary"]["state"];
export type EnvironmentName = Schemas["ChangeRequestSummary"]["environment"];

export const STATES: ChangeRequestState[] = [
  "draft",
  "open",
  "approved",
  "scheduled",
  "applied",
  "failed",
  "rejected",
  "cancelled",
  "expired",
];
export const ENVIRONMENTS: EnvironmentName[] = ["development", "staging", "production"];

const PROPOSAL_VERBS = { deploy: "Deploy", revert: "Revert to", split: "Split to", promote: "Promote" } as const;

/** What a request proposes, in words (a split's with its weight in percent). */
export const proposalOf = (request: Schemas["ChangeRequestSummary"]) =>
  `${PROPOSAL_VERBS[request.kind]} ${versionName(request.config_name, request.revision)}` +
  (request.split ? ` at ${request.split.weight / 100}%` : "");

export default function ChangeRequests({ params: { orgId }, query }: PageProps) {
  const session = useSession();
  const organization = useLoad(() => session.organization(orgId), [orgId]);
  const projectId = query.get("project_id") ?? organization.data?.workspaces[0]?.default_project_id;
  const environment = (query.get("environment") ?? undefined) as EnvironmentName | undefined;
  const state = (query.get("state") ?? undefined) as ChangeRequestState | undefined;
  const [more, setMore] = useState<{ items: Schemas["ChangeRequestSummary"][]; cursor: string | null }>();
  const awaiting = query.get("awaiting_my_review") === "true";
  const filters = {
    project_id: projectId,
    environment,
    state,
    app_id: query.get("app_id") ?? undefined,
    awaiting_my_review: awaiting ? ("true" as const) : undefined,
  };
  const page = useLoad(async () => {
    setMore(undefined);
    return projectId ? answer(session.api.GET("/change-requests", { params: { query: filters } })) : undefined;
  }, [projectId, environment, state, filters.app_id, awaiting]);
  const paging = useAction();

  /** The same page with one filter changed (a link to it can be shared). */
  const filterBy = (name: string, value: string) => {
    const next = new URLSearchParams(query);
    if (value) next.set(name, value);
    else next.delete(name);
    navigate(`/organizations/${orgId}/change-requests?${next}`, { replace: true });
  };
  const requests = [...(page.data?.change_requests ?? []), ...(more?.items ?? [])];
  const cursor = more ? more.cursor : page.data?.next_cursor;
  const loadMore = () =>
    paging.run(async () => {
      const next = await answer(
        session.api.GET("/change-requests", { params: { query: { ...filters, cursor: cursor ?? undefined } } }),
      );
      setMore({ items: [...(more?.items ?? []), ...next.change_requests], cursor: next.next_cursor });
    });

  return (
    <>
      <h1>{awaiting ? "Change requests awaiting my review" : "Change requests"}</h1>
      <p>
        <Link to={`/organizations/${orgId}/protection${projectId ? `?project_id=${projectId}` : ""}`}>
          Protection settings of the environments
        </Link>
      </p>
      <form class="switchers" aria-label="Filters" onSubmit={(event) => event.preventDefault()}>
        <label>
          Project
          <select value={projectId} onChange={(event) => filterBy("project_id", event.currentTarget.value)}>
            {organization.data?.workspaces.map((workspace) => (
              <option key={workspace.id} value={workspace.default_project_id}>
                {workspace.name}: default project
              </option>
            ))}
          </select>
        </label>
        <label>
          State
          <select value={state ?? ""} onChange={(event) => filterBy("state", event.currentTarget.value)}>
            <option value="">any</option>
            {STATES.map((one) => (
              <option key={one} value={one}>
                {one}
              </option>
            ))}
          </select>
        </label>
        <label>
          Environment
          <select value={environment ?? ""} onChange={(event) => filterBy("environment", event.currentTarget.value)}>
            <option value="">any</option>
            {ENVIRONMENTS.map((one) => (
              <option key={one} value={one}>
                {one}
              </option>
            ))}
          </select>
        </label>
        <label class="check">
          <input
            type="checkbox"
            checked={awaiting}
            onChange={(event) => filterBy("awaiting_my_review", event.currentTarget.checked ? "true" : "")}
          />
          Awaiting my review
        </label>
        {filters.app_id && (
          <button type="button" onClick={() => filterBy("app_id", "")}>
            Show every app's
          </button>
        )}
      </form>
      {(organization.loading || page.loading) && <Loading label="Loading the change requests" />}
      {organization.error && <ErrorNote error={organization.error} />}
      {page.error && <ErrorNote error={page.error} />}
      {page.data && requests.length === 0 && (
        <p class="empty">
          {awaiting
            ? "Nothing awaits your review here."
            : "No change request here. Propose one from a version of a variant, or from an environment's history."}
        </p>
      )}
      {requests.length > 0 && (
        <table class="list">
          <caption class="visually-hidden">Change requests, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Title</th>
              <th scope="col">App</th>
              <th scope="col">Environment</th>
              <th scope="col">Proposes</th>
              <th scope="col">State</th>
              <th scope="col">Approvals</th>
              <th scope="col">Author</th>
              <th scope="col">Opened</th>
            </tr>
          </thead>
          <tbody>
            {requests.map((request) => (
              <tr key={request.id}>
                <th scope="row">
                  <Link to={`/change-requests/${request.id}`}>{request.title}</Link>
                </th>
                <td>
                  <Link to={`/apps/${request.app_id}`}>{request.app_name}</Link>
                </td>
                <td>{request.environment}</td>
                <td>{proposalOf(request)}</td>
                <td>
                  <span class={`state state-${request.state}`}>{request.state}</span>
                </td>
                <td>
                  {request.approvals} of {request.approvals_required}
                </td>
                <td>{request.author.username}</td>
                <td>
                  <Time at={request.created_at} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {cursor && (
        <p class="pager">
          <ActionButton busy={paging.busy} onClick={() => void loadMore()}>
            {paging.busy ? "Loading…" : "More"}
          </ActionButton>
        </p>
      )}
      {paging.error && <ErrorNote error={paging.error} />}
    </>
  );
}
