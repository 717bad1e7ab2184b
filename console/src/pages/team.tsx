import { useState } from "preact/hooks";
import { answer, type Schemas } from "../api";
import { CopyableId, ShownOnce } from "../copy";
import type { PageProps } from "../router";
import { type Permission, type Role, usePermissions, useSession } from "../session";
import { ActionButton, ErrorNote, Loading, Time, useAction, useLoad } from "../ui";

/**
 * 8. Team: an organization's members and their roles, its open invitations (send, resend), and the caller's own API
 * keys (create, read-only or expiring, shown once; revoke). Members and roles are per organization (any of its
 * workspaces answers them); the API lists open invitations to owners and workspace admins only.
 */
export const path = "/organizations/:orgId/team";

type Details = Schemas["OrganizationDetails"];

export default function Team({ params: { orgId } }: PageProps) {
  const { api } = useSession();
  const may = usePermissions(orgId);
  // Read here, not from the session's once-per-sign-in copy: this page changes members and invitations.
  const details = useLoad(() => answer(api.GET("/organizations/{org_id}", { params: { path: { org_id: orgId } } })), [orgId]);
  const roles = useLoad(() => answer(api.GET("/workspaces/roles")), []);
  const manage = may?.("manage") ?? { state: "hidden" };

  if (details.loading && !details.data) return <Loading label="Loading the team" />;
  if (details.error) return <ErrorNote error={details.error} />;
  if (!details.data) return null;
  const org = details.data;
  const roleNames = roles.data?.map((role) => role.role_name) ?? [];
  return (
    <>
      <h1>Team of {org.name}</h1>
      <h2>Members</h2>
      <Members org={org} roleNames={roleNames} permission={manage} onChanged={details.reload} />
      <h2>Invitations</h2>
      <Invitations org={org} roleNames={roleNames} permission={manage} onChanged={details.reload} />
      <h2>Your API keys</h2>
      <Keys org={org} />
    </>
  );
}

function Members({
  org,
  roleNames,
  permission,
  onChanged,
}: {
  org: Details;
  roleNames: Role[];
  permission: Permission;
  onChanged: () => void;
}) {
  const { api } = useSession();
  const action = useAction();
  const workspace = org.workspaces[0];
  if (!workspace) return <p class="empty">No workspace yet.</p>;
  const setRole = async (member: Details["workspaces"][number]["members"][number], role: Role, select: HTMLSelectElement) => {
    const { email, username } = member.user;
    const from = member.roles[0]?.role_name;
    const asked = `Change the role of ${username} (${email}) from ${from?.replace("_", " ")} to ${role.replace("_", " ")}? It applies in every workspace of ${org.name} at once.`;
    if (!confirm(asked)) {
      // Nothing sent: the list shows the role the member still has.
      select.value = from ?? "";
      return;
    }
    const done = await action.run(() =>
      answer(
        api.POST("/workspaces/{workspace_id}/roles", {
          params: { path: { workspace_id: workspace.id } },
          body: { email, organization_id: org.id, role },
        }),
      ),
    );
    if (done) onChanged();
  };
  const remove = async (email: string) => {
    if (!confirm(`Remove ${email} from ${org.name}? Their keys for its projects stop working at once.`)) return;
    const done = await action.run(() =>
      answer(
        api.DELETE("/workspaces/{workspace_id}/users", {
          params: { path: { workspace_id: workspace.id }, query: { org_id: org.id, email } },
        }),
      ),
    );
    if (done) onChanged();
  };
  return (
    <>
      <table class="list">
        <caption class="visually-hidden">Members and their roles</caption>
        <thead>
          <tr>
            <th scope="col">Member</th>
            <th scope="col">Email</th>
            <th scope="col">Role</th>
            {permission.state !== "hidden" && <th scope="col">Remove</th>}
          </tr>
        </thead>
        <tbody>
          {workspace.members.map((member) => {
            const { user } = member;
            const role = member.roles[0]?.role_name;
            return (
              <tr key={user.id}>
                <th scope="row">{user.username}</th>
                <td>{user.email}</td>
                <td>
                  {permission.state === "allowed" ? (
                    <select
                      aria-label={`Role of ${user.username}`}
                      value={role}
                      disabled={action.busy}
                      onChange={(event) => void setRole(member, event.currentTarget.value as Role, event.currentTarget)}
                    >
                      {roleNames.map((name) => (
                        <option key={name} value={name}>
                          {name.replace("_", " ")}
                        </option>
                      ))}
                    </select>
                  ) : (
                    (role?.replace("_", " ") ?? "")
                  )}
                </td>
                {permission.state !== "hidden" && (
                  <td>
                    <ActionButton
                      permission={permission}
                      busy={action.busy}
                      class="danger"
                      onClick={() => void remove(user.email)}
                    >
                      Remove<span class="visually-hidden"> {user.username}</span>
                    </ActionButton>
                  </td>
                )}
              </tr>
            );
          })}
        </tbody>
      </table>
      {action.busy && <Loading label="Saving" />}
      {action.error && <ErrorNote error={action.error} prefix="Refused" />}
    </>
  );
}

function Invitations({
  org,
  roleNames,
  permission,
  onChanged,
}: {
  org: Details;
  roleNames: Role[];
  permission: Permission;
  onChanged: () => void;
}) {
  const { api } = useSession();
  const action = useAction();
  const [email, setEmail] = useState("");
  const [role, setRole] = useState<Role>("viewer");
  const [workspaceId, setWorkspaceId] = useState(org.workspaces[0]?.id ?? "");
  const [answered, setAnswered] = useState<Schemas["Invitation"]>();
  const send = async (write: () => Promise<Schemas["Invitation"]>) => {
    setAnswered(undefined);
    const done = await action.run(async () => setAnswered(await write()));
    if (done) onChanged();
  };
  const org_id = org.id;
  const invite = () =>
    send(() =>
      answer(
        api.POST("/organizations/{org_id}/workspaces/{workspace_id}/invite", {
          params: { path: { org_id, workspace_id: workspaceId } },
          body: [{ email, roles: [role] }],
        }),
      ),
    );
  const resend = (invitation: Details["invitations"][number]) =>
    send(() =>
      answer(
        api.POST("/organizations/{org_id}/workspaces/{workspace_id}/invite/resend", {
          params: { path: { org_id, workspace_id: invitation.workspace_id } },
          body: { email: invitation.email },
        }),
      ),
    );
  return (
    <>
      {org.invitations.length === 0 && (
        <p class="empty">
          {permission.state === "allowed" ? "No open invitation." : "Open invitations are shown to owners and workspace admins."}
        </p>
      )}
      {org.invitations.length > 0 && (
        <table class="list">
          <caption class="visually-hidden">Open invitations</caption>
          <thead>
            <tr>
              <th scope="col">Email</th>
              <th scope="col">Role</th>
              <th scope="col">Sent</th>
              <th scope="col">Expires</th>
              <th scope="col">Resend</th>
            </tr>
          </thead>
          <tbody>
            {org.invitations.map((invitation) => (
              <tr key={invitation.email}>
                <th scope="row">{invitation.email}</th>
                <td>{invitation.role.replace("_", " ")}</td>
                <td>
                  <Time at={invitation.created_at} />
                </td>
                <td>
                  <Time at={invitation.expires_at} />
                </td>
                <td>
                  <ActionButton permission={permission} busy={action.busy} onClick={() => void resend(invitation)}>
                    Resend<span class="visually-hidden"> to {invitation.email}</span>
                  </ActionButton>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {permission.state !== "hidden" && (
        <form
          class="inline-form"
          aria-label="Invite"
          onSubmit={(event) => {
            event.preventDefault();
            void invite();
          }}
        >
          <label>
            Email
            <input type="email" required value={email} onInput={(event) => setEmail(event.currentTarget.value)} />
          </label>
          <label>
            Role
            <select value={role} onChange={(event) => setRole(event.currentTarget.value as Role)}>
              {roleNames.map((name) => (
                <option key={name} value={name}>
                  {name.replace("_", " ")}
                </option>
              ))}
            </select>
          </label>
          {org.workspaces.length > 1 && (
            <label>
              Through the workspace
              <select value={workspaceId} onChange={(event) => setWorkspaceId(event.currentTarget.value)}>
                {org.workspaces.map((workspace) => (
                  <option key={workspace.id} value={workspace.id}>
                    {workspace.name}
                  </option>
                ))}
              </select>
            </label>
          )}
          <ActionButton type="submit" permission={permission} busy={action.busy}>
            {action.busy ? "Sending…" : "Invite"}
          </ActionButton>
        </form>
      )}
      {answered &&
        (answered.token ? (
          <ShownOnce label={`The invitation of ${answered.email}: its token.`} secret={answered.token} />
        ) : (
          <p role="status">Invitation mailed to {answered.email}.</p>
        ))}
      {action.error && <ErrorNote error={action.error} prefix="Refused" />}
    </>
  );
}

function Keys({ org }: { org: Details }) {
  const session = useSession();
  const { api } = session;
  const keys = useLoad(() => answer(api.GET("/keys")), []);
  const action = useAction();
  const [workspaceId, setWorkspaceId] = useState(org.workspaces[0]?.id ?? "");
  const [readOnly, setReadOnly] = useState(false);
  const [expires, setExpires] = useState("");
  const [created, setCreated] = useState<string>();
  // A read-only key makes and deletes no keys (the API's 403): it shows none of these controls.
  const permission: Permission = session.readOnly ? { state: "hidden" } : { state: "allowed" };
  const create = async () => {
    setCreated(undefined);
    const done = await action.run(async () =>
      setCreated(
        await answer(
          api.POST("/keys", {
            params: {
              query: {
                workspace_id: workspaceId,
                read_only: readOnly ? "true" : undefined,
                expiration_date: expires ? new Date(expires).toISOString() : undefined,
              },
            },
          }),
        ),
      ),
    );
    if (done) keys.reload();
  };
  const revoke = async (prefix: string) => {
    if (!confirm(`Revoke the key ${prefix}? It stops working from the next request, this console's too if it is this one.`))
      return;
    const done = await action.run(() => answer(api.DELETE("/keys/{key_prefix}", { params: { path: { key_prefix: prefix } } })));
    if (done) keys.reload();
  };
  const workspaceName = (id: string) => org.workspaces.find((workspace) => workspace.id === id)?.name ?? id;
  return (
    <>
      {keys.loading && <Loading label="Loading your keys" />}
      {keys.error && <ErrorNote error={keys.error} />}
      {keys.data && (
        <table class="list">
          <caption class="visually-hidden">Your API keys, oldest first</caption>
          <thead>
            <tr>
              <th scope="col">Prefix</th>
              <th scope="col">Workspace</th>
              <th scope="col">Access</th>
              <th scope="col">Created</th>
              <th scope="col">Last used</th>
              <th scope="col">Expires</th>
              {permission.state !== "hidden" && <th scope="col">Revoke</th>}
            </tr>
          </thead>
          <tbody>
            {keys.data.map((key) => (
              <tr key={key.prefix}>
                <th scope="row">
                  <CopyableId id={key.prefix} what={`the prefix ${key.prefix}`} />
                </th>
                <td>{workspaceName(key.workspace_id)}</td>
                <td>{key.read_only ? "read-only" : "read and write"}</td>
                <td>
                  <Time at={key.created_at} />
                </td>
                <td>
                  <Time at={key.last_used_at} />
                </td>
                <td>{key.expiration_date ? <Time at={key.expiration_date} /> : "never"}</td>
                {permission.state !== "hidden" && (
                  <td>
                    <ActionButton
                      permission={permission}
                      busy={action.busy}
                      class="danger"
                      onClick={() => void revoke(key.prefix)}
                    >
                      Revoke<span class="visually-hidden"> {key.prefix}</span>
                    </ActionButton>
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {permission.state !== "hidden" && (
        <form
          class="inline-form"
          aria-label="New key"
          onSubmit={(event) => {
            event.preventDefault();
            void create();
          }}
        >
          <label>
            For the workspace
            <select value={workspaceId} onChange={(event) => setWorkspaceId(event.currentTarget.value)}>
              {org.workspaces.map((workspace) => (
                <option key={workspace.id} value={workspace.id}>
                  {workspace.name}
                </option>
              ))}
            </select>
          </label>
          <label class="check">
            <input type="checkbox" checked={readOnly} onChange={(event) => setReadOnly(event.currentTarget.checked)} />
            Read-only
          </label>
          <label>
            Expires (empty: never)
            <input type="datetime-local" value={expires} onInput={(event) => setExpires(event.currentTarget.value)} />
          </label>
          <ActionButton type="submit" permission={permission} busy={action.busy}>
            {action.busy ? "Creating…" : "Create a key"}
          </ActionButton>
        </form>
      )}
      {created && <ShownOnce label="Your new key." secret={created} />}
      {action.error && <ErrorNote error={action.error} prefix="Refused" />}
    </>
  );
}
