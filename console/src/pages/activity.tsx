import { useState } from "preact/hooks";
import { answer, type Schemas } from "../api";
import { answerExact, exactAt } from "../diff-view";
import { sentenceOf } from "../events";
import { type ExactValue, formatExact } from "../exact-json";
import { Link, navigate, type PageProps } from "../router";
import { useSession } from "../session";
import { ActionButton, ErrorNote, Loading, Time, useAction, useLoad } from "../ui";

/**
 * 7. Activity: an organization's audit log (GET /events), newest first, filtered by type, app and time; each event as
 * a sentence (events.ts), its JSON, exact as the API answered it, behind a toggle.
 */
export const path = "/organizations/:orgId/activity";

type EventPage = Schemas["EventPage"];

// GET /events matches a family by its prefix ("environment." matches environment.deployed and the rest).
const FAMILIES = ["app.", "config.", "environment.", "change_request.", "member.", "api_key.", "webhook.", "workspace."];

/** A datetime-local field's value as an RFC 3339 instant (the browser's time zone), or undefined when empty. */
const instant = (local: string | null) => (local ? new Date(local).toISOString() : undefined);

export default function Activity({ params: { orgId }, query }: PageProps) {
  const session = useSession();
  const organization = useLoad(() => session.organization(orgId), [orgId]);
  const apps = useLoad(async () => {
    const workspaces = (await session.organization(orgId)).workspaces;
    const lists = await Promise.all(
      workspaces.map((workspace) => answer(session.api.GET("/apps", { params: { query: { workspace_id: workspace.id } } }))),
    );
    return lists.flat();
  }, [orgId]);
  const filters = {
    organization_id: orgId,
    type: query.get("type") || undefined,
    app_id: query.get("app_id") || undefined,
    since: instant(query.get("since")),
    until: instant(query.get("until")),
  };
  const [more, setMore] = useState<{
    events: { data: EventPage["events"][number]; exact: ExactValue | undefined }[];
    cursor: string | null;
  }>();
  const page = useLoad(async () => {
    setMore(undefined);
    return answerExact<EventPage>(session.api.GET("/events", { params: { query: filters }, parseAs: "text" }));
  }, [orgId, query.toString()]);
  const paging = useAction();

  const withExact = (read: { data: EventPage; exact: ExactValue }) =>
    read.data.events.map((event, index) => ({ data: event, exact: exactAt(read.exact, "events", index) }));
  const events = [...(page.data ? withExact(page.data) : []), ...(more?.events ?? [])];
  const cursor = more ? more.cursor : page.data?.data.next_cursor;
  const loadMore = () =>
    paging.run(async () => {
      const next = await answerExact<EventPage>(
        session.api.GET("/events", { params: { query: { ...filters, cursor: cursor ?? undefined } }, parseAs: "text" }),
      );
      setMore({ events: [...(more?.events ?? []), ...withExact(next)], cursor: next.data.next_cursor });
    });
  const filter = (form: HTMLFormElement) => {
    const next = new URLSearchParams();
    for (const [name, value] of new FormData(form)) if (typeof value === "string" && value) next.set(name, value);
    navigate(`/organizations/${orgId}/activity?${next}`, { replace: true });
  };

  return (
    <>
      <h1>Activity of {organization.data?.name ?? "the organization"}</h1>
      <p>
        <Link to={`/organizations/${orgId}/webhooks`}>Webhooks and their deliveries</Link>
      </p>
      <form
        class="switchers"
        aria-label="Filters"
        onSubmit={(event) => {
          event.preventDefault();
          filter(event.currentTarget);
        }}
      >
        <label>
          Type (or family, such as environment.)
          <input name="type" list="event-families" defaultValue={query.get("type") ?? ""} />
          <datalist id="event-families">
            {FAMILIES.map((family) => (
              <option key={family} value={family} />
            ))}
          </datalist>
        </label>
        <label>
          App
          <select name="app_id">
            <option value="">any</option>
            {apps.data?.map((app) => (
              <option key={app.app_id} value={app.app_id} selected={app.app_id === query.get("app_id")}>
                {app.app_name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Since
          <input name="since" type="datetime-local" defaultValue={query.get("since") ?? ""} />
        </label>
        <label>
          Until
          <input name="until" type="datetime-local" defaultValue={query.get("until") ?? ""} />
        </label>
        <button type="submit">Filter</button>
      </form>
      {page.loading && <Loading label="Loading the activity" />}
      {page.error && <ErrorNote error={page.error} />}
      {page.data && events.length === 0 && <p class="empty">Nothing recorded here matches these filters.</p>}
      {events.length > 0 && (
        <table class="list">
          <caption class="visually-hidden">Events, newest first</caption>
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">What</th>
              <th scope="col">App</th>
              <th scope="col">Details</th>
            </tr>
          </thead>
          <tbody>
            {events.map(({ data: event, exact }) => (
              <tr key={event.id}>
                <td>
                  <Time at={event.occurred_at} />
                </td>
                <th scope="row" class="sentence">
                  {sentenceOf(event)}
                </th>
                <td>{typeof event.data.app_name === "string" ? event.data.app_name : ""}</td>
                <td>
                  {typeof event.data.change_request_id === "string" && (
                    <Link to={`/change-requests/${event.data.change_request_id}`}>Its change request</Link>
                  )}
                  <details>
                    <summary>JSON of {event.type}</summary>
                    <pre>{formatExact(exact ?? null)}</pre>
                  </details>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {cursor && (
        <p class="pager">
          <ActionButton busy={paging.busy} onClick={() => void loadMore()}>
            {paging.busy ? "Loading…" : "Older events"}
          </ActionButton>
        </p>
      )}
      {paging.error && <ErrorNote error={paging.error} />}
    </>
  );
}
