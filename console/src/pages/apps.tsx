import { useState } from "preact/hooks";
import { answer, type Schemas } from "../api";
import { Link, navigate, type PageProps } from "../router";
import { type Permission, usePermissions, useSession } from "../session";
import { ActionButton, ErrorNote, Loading, Time, useAction, useLoad } from "../ui";

/** 1. Apps: the apps of a workspace's project, with the organization, workspace and project switchers. */
export const path = "/organizations/:orgId/workspaces/:workspaceId";

export default function Apps({ params: { orgId, workspaceId } }: PageProps) {
  const session = useSession();
  const may = usePermissions(orgId);
  const organization = useLoad(() => session.organization(orgId), [orgId]);
  const apps = useLoad(
    () => answer(session.api.GET("/apps", { params: { query: { workspace_id: workspaceId } } })),
    [workspaceId],
  );
  const [search, setSearch] = useState("");
  const workspace = organization.data?.workspaces.find((candidate) => candidate.id === workspaceId);
  const shown = apps.data?.filter((app) => app.app_name.toLowerCase().includes(search.trim().toLowerCase()));

  return (
    <>
      <h1>Apps</h1>
      <div class="switchers">
        <label>
          Organization
          <select
            value={orgId}
            onChange={async (event) => {
              const details = await session.organization(event.currentTarget.value);
              navigate(`/organizations/${details.id}/workspaces/${details.workspaces[0]?.id ?? ""}`);
            }}
          >
            {session.organizations.map((org) => (
              <option key={org.id} value={org.id}>
                {org.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Workspace
          <select
            value={workspaceId}
            onChange={(event) => navigate(`/organizations/${orgId}/workspaces/${event.currentTarget.value}`)}
          >
            {organization.data?.workspaces.map((candidate) => (
              <option key={candidate.id} value={candidate.id}>
                {candidate.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Project
          <select value={workspace?.default_project_id}>
            {workspace && (
              <option value={workspace.default_project_id}>default ({workspace.default_project_id.slice(-12)})</option>
            )}
          </select>
        </label>
        {organization.data && <span class="role">Your role: {organization.data.role.replace("_", " ")}</span>}
      </div>
      {organization.error && <ErrorNote error={organization.error} />}
      {may && <CreateApp workspaceId={workspaceId} permission={may("edit")} onCreated={apps.reload} />}
      <label class="search">
        Search by name
        <input type="search" value={search} onInput={(event) => setSearch(event.currentTarget.value)} />
      </label>
      {apps.loading && <Loading label="Loading the apps" />}
      {apps.error && <ErrorNote error={apps.error} />}
      {apps.data?.length === 0 && <p class="empty">No apps in this project yet: create the first one above.</p>}
      {shown && shown.length > 0 && (
        <table class="list">
          <caption class="visually-hidden">Apps of this project</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Last changed</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((app) => (
              <AppRow key={app.app_id} app={app} permission={may?.("edit")} onChanged={apps.reload} />
            ))}
          </tbody>
        </table>
      )}
      {shown?.length === 0 && apps.data && apps.data.length > 0 && <p class="empty">No app's name contains “{search}”.</p>}
    </>
  );
}

function CreateApp({
  workspaceId,
  permission,
  onCreated,
}: {
  workspaceId: string;
  permission: Permission;
  onCreated: () => void;
}) {
  const session = useSession();
  const [name, setName] = useState("");
  const action = useAction();
  if (permission.state === "hidden") return null;
  const create = async () => {
    const created = await action.run(() =>
      answer(session.api.POST("/apps", { body: { app_name: name, workspace_id: workspaceId } })),
    );
    if (created) {
      setName("");
      onCreated();
    }
  };
  return (
    <form
      class="inline-form"
      onSubmit={(event) => {
        event.preventDefault();
        void create();
      }}
    >
      <label>
        New app's name
        <input value={name} required onInput={(event) => setName(event.currentTarget.value)} />
      </label>
      <ActionButton type="submit" permission={permission} busy={action.busy}>
        {action.busy ? "Creating…" : "Create app"}
      </ActionButton>
      {action.error && <ErrorNote error={action.error} />}
    </form>
  );
}

function AppRow({
  app,
  permission = { state: "hidden" },
  onChanged,
}: {
  app: Schemas["AppListItem"];
  permission?: Permission;
  onChanged: () => void;
}) {
  const session = useSession();
  const [mode, setMode] = useState<"view" | "rename" | "delete">("view");
  const [text, setText] = useState("");
  const action = useAction();
  const target = { params: { path: { app_id: app.app_id } } };
  const switchTo = (next: typeof mode, initialText = "") => {
    setMode(next);
    setText(initialText);
    action.clear();
  };
  const submit = async () => {
    const done = await action.run(() =>
      mode === "rename"
        ? answer(session.api.PATCH("/apps/{app_id}", { ...target, body: { app_name: text } }))
        : answer(session.api.DELETE("/apps/{app_id}", target)),
    );
    if (done) {
      setMode("view");
      onChanged();
    }
  };
  return (
    <tr>
      <th scope="row">
        <Link to={`/apps/${app.app_id}`}>{app.app_name}</Link>
      </th>
      <td>
        <Time at={app.updated_at} />
      </td>
      <td>
        {mode === "view" ? (
          <>
            <ActionButton permission={permission} onClick={() => switchTo("rename", app.app_name)}>
              Rename
            </ActionButton>
            <ActionButton permission={permission} class="danger" onClick={() => switchTo("delete")}>
              Delete
            </ActionButton>
          </>
        ) : (
          <form
            class="inline-form"
            onSubmit={(event) => {
              event.preventDefault();
              void submit();
            }}
          >
            <label>
              {mode === "rename"
                ? `New name of ${app.app_name}`
                : `Type “${app.app_name}” to delete it with its variants and history`}
              <input value={text} required onInput={(event) => setText(event.currentTarget.value)} />
            </label>
            <button
              type="submit"
              class={mode === "delete" ? "danger" : undefined}
              disabled={action.busy || (mode === "delete" && text !== app.app_name)}
            >
              {mode === "rename" ? "Save name" : "Delete for good"}
            </button>
            <button type="button" onClick={() => switchTo("view")}>
              Cancel
            </button>
            {action.error && <ErrorNote error={action.error} />}
          </form>
        )}
      </td>
    </tr>
  );
}
