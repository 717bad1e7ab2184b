import type { Schemas } from "./api";
import { useSession } from "./session";
import { ErrorNote, Loading, useLoad } from "./ui";

/*
 * Requested reviewers (docs/CONSOLE.md "Daily use" 4): chosen among the members who may approve in the environment
 * (its protection settings' approver roles; the author only where self-approval is allowed), since the API refuses any
 * other (422). Their user ids are what the API takes.
 */

type Protection = Pick<Schemas["Protection"], "approver_roles" | "allow_self_approval">;

export function ReviewerPicker({
  orgId,
  projectId,
  protection,
  authorId,
  chosen,
  onChange,
}: {
  orgId: string;
  projectId: string;
  protection: Protection;
  /** The request's author: not offered unless self-approval is allowed. */
  authorId: string;
  chosen: string[];
  onChange: (reviewers: string[]) => void;
}) {
  const session = useSession();
  const organization = useLoad(() => session.organization(orgId), [orgId]);
  if (organization.loading) return <Loading label="Loading who may review" />;
  if (organization.error) return <ErrorNote error={organization.error} />;
  const members = organization.data?.workspaces.find((workspace) => workspace.default_project_id === projectId)?.members ?? [];
  const candidates = members.filter(
    ({ user, roles }) =>
      (protection.allow_self_approval || user.id !== authorId) &&
      roles.some((role) => (protection.approver_roles as string[]).includes(role.role_name)),
  );
  return (
    <fieldset class="reviewers">
      <legend>Ask for a review</legend>
      {candidates.length === 0 && <p class="empty">No other member may approve here.</p>}
      {candidates.map(({ user, roles }) => (
        <label key={user.id} class="check">
          <input
            type="checkbox"
            checked={chosen.includes(user.id)}
            onChange={(event) =>
              onChange(event.currentTarget.checked ? [...chosen, user.id] : chosen.filter((id) => id !== user.id))
            }
          />
          {user.username} ({roles[0]?.role_name.replace("_", " ")})
        </label>
      ))}
    </fieldset>
  );
}
