import { useState } from "preact/hooks";
import { answer, type Schemas } from "../api";
import { Link, navigate, type PageProps } from "../router";
import { type Permission, usePermissions, useSession } from "../session";
import { ActionButton, ErrorNote, Loading, Time, useAction, useLoad } from "../ui";
import { ENVIRONMENTS, type EnvironmentName } from "./change-requests";

/**
 * 6. Protection settings of a project's environments (docs/CHANGE-REQUESTS.md §1): any role reads them; owners and
 * workspace admins change them (a PUT replaces them whole).
 */
export const path = "/organizations/:orgId/protection";

type Protection = Schemas["Protection"];
type Settings = Required<Schemas["ProtectionSettings"]>;
const APPROVERS: Settings["approver_roles"] = ["owner", "workspace_admin", "editor", "deployment_manager"];
const BYPASSERS: Settings["bypass_roles"] = ["owner", "workspace_admin"];

export default function ProtectionPage({ params: { orgId }, query }: PageProps) {
  const session = useSession();
  const may = usePermissions(orgId);
  const organization = useLoad(() => session.organization(orgId), [orgId]);
  const projectId = query.get("project_id") ?? organization.data?.workspaces[0]?.default_project_id;
  const settings = useLoad(
    async () =>
      projectId
        ? Promise.all(
            ENVIRONMENTS.map((environment) =>
              answer(
                session.api.GET("/projects/{project_id}/environments/{environment_name}/protection", {
                  params: { path: { project_id: projectId, environment_name: environment } },
                }),
              ),
            ),
          )
        : undefined,
    [projectId],
  );
  return (
    <>
      <nav aria-label="Breadcrumb">
        <Link to={`/organizations/${orgId}/change-requests`}>Change requests</Link>
      </nav>
      <h1>Protected environments</h1>
      <label>
        Project
        <select
          value={projectId}
          onChange={(event) => navigate(`/organizations/${orgId}/protection?project_id=${event.currentTarget.value}`)}
        >
          {organization.data?.workspaces.map((workspace) => (
            <option key={workspace.id} value={workspace.default_project_id}>
              {workspace.name}: default project
            </option>
          ))}
        </select>
      </label>
      {settings.loading && <Loading label="Loading the settings" />}
      {settings.error && <ErrorNote error={settings.error} />}
      <div class="environments">
        {settings.data?.map((current) => (
          <SettingsForm
            key={`${current.project_id}-${current.environment}`}
            current={current}
            permission={may?.("manage") ?? { state: "hidden" }}
            onSaved={settings.reload}
          />
        ))}
      </div>
    </>
  );
}

function SettingsForm({ current, permission, onSaved }: { current: Protection; permission: Permission; onSaved: () => void }) {
  const { api } = useSession();
  const [draft, setDraft] = useState<Settings>(current);
  const action = useAction();
  const change = (fields: Partial<Settings>) => setDraft({ ...draft, ...fields });
  const toggle = <Role extends string>(list: Role[], role: Role, on: boolean) =>
    on ? [...list, role] : list.filter((listed) => listed !== role);
  const save = async () => {
    const {
      protected: isProtected,
      required_approvals,
      allow_self_approval,
      approver_roles,
      bypass_roles,
      request_ttl_days,
    } = draft;
    const saved = await action.run(() =>
      answer(
        api.PUT("/projects/{project_id}/environments/{environment_name}/protection", {
          params: { path: { project_id: current.project_id, environment_name: current.environment as EnvironmentName } },
          body: {
            protected: isProtected,
            required_approvals,
            allow_self_approval,
            approver_roles,
            bypass_roles,
            request_ttl_days,
          },
        }),
      ),
    );
    if (saved) onSaved();
  };
  const id = `protection-${current.environment}`;
  const readOnly = permission.state !== "allowed";
  return (
    <form
      class="card"
      aria-labelledby={id}
      title={permission.state === "disabled" ? permission.reason : undefined}
      onSubmit={(event) => {
        event.preventDefault();
        void save();
      }}
    >
      <h2 id={id}>{current.environment}</h2>
      <fieldset disabled={readOnly}>
        <legend class="visually-hidden">Settings of {current.environment}</legend>
        <label class="check">
          <input
            type="checkbox"
            checked={draft.protected}
            onChange={(event) => change({ protected: event.currentTarget.checked })}
          />
          Protected: changes only through an approved change request
        </label>
        <label>
          Approvals required
          <input
            type="number"
            min={1}
            max={10}
            value={draft.required_approvals}
            onInput={(event) => change({ required_approvals: Number(event.currentTarget.value) })}
          />
        </label>
        <label class="check">
          <input
            type="checkbox"
            checked={draft.allow_self_approval}
            onChange={(event) => change({ allow_self_approval: event.currentTarget.checked })}
          />
          Authors may approve their own requests
        </label>
        <fieldset>
          <legend>Approvers</legend>
          {APPROVERS.map((role) => (
            <label class="check" key={role}>
              <input
                type="checkbox"
                checked={draft.approver_roles.includes(role)}
                onChange={(event) => change({ approver_roles: toggle(draft.approver_roles, role, event.currentTarget.checked) })}
              />
              {role.replace("_", " ")}
            </label>
          ))}
        </fieldset>
        <fieldset>
          <legend>May bypass in an emergency</legend>
          {BYPASSERS.map((role) => (
            <label class="check" key={role}>
              <input
                type="checkbox"
                checked={draft.bypass_roles.includes(role)}
                onChange={(event) => change({ bypass_roles: toggle(draft.bypass_roles, role, event.currentTarget.checked) })}
              />
              {role.replace("_", " ")}
            </label>
          ))}
        </fieldset>
        <label>
          Requests expire after (days)
          <input
            type="number"
            min={1}
            max={90}
            value={draft.request_ttl_days}
            onInput={(event) => change({ request_ttl_days: Number(event.currentTarget.value) })}
          />
        </label>
      </fieldset>
      <p class="help">
        {current.updated_by ? (
          <>
            Last changed by {current.updated_by.username}, <Time at={current.updated_at} />
          </>
        ) : (
          "The defaults: never changed."
        )}
      </p>
      <ActionButton type="submit" permission={permission} busy={action.busy}>
        {action.busy ? "Saving…" : `Save ${current.environment}`}
      </ActionButton>
      {action.error && <ErrorNote error={action.error} prefix="Refused" />}
    </form>
  );
}
