import { answer } from "./api";
import { Link } from "./router";
import { useSession } from "./session";
import { useLoad } from "./ui";

/*
 * The header's "Awaiting my review" (docs/CONSOLE.md "Daily use" 4): how many change requests the person may approve
 * and has not reviewed in their current version, in the project the change requests page opens on (the organization's
 * first workspace's), read again at every page the person opens. The count is of one page of the API's largest (200):
 * more shows as "200+".
 */

const LIMIT = 200;

export function AwaitingCount({ orgId, path }: { orgId: string; path: string }) {
  const session = useSession();
  const awaiting = useLoad(async () => {
    const organization = await session.organization(orgId);
    const projectId = organization.workspaces[0]?.default_project_id;
    const page = await answer(
      session.api.GET("/change-requests", {
        params: { query: { project_id: projectId, awaiting_my_review: "true", limit: LIMIT } },
      }),
    );
    return { count: page.change_requests.length, more: page.next_cursor !== null };
  }, [orgId, path]);
  const count = awaiting.data && `${awaiting.data.count}${awaiting.data.more ? "+" : ""}`;
  return (
    <Link to={`/organizations/${orgId}/change-requests?awaiting_my_review=true`} class="awaiting">
      Awaiting my review
      {count !== undefined && (
        <span class={awaiting.data?.count ? "count" : "count none"}>
          <span class="visually-hidden">: </span>
          {count}
        </span>
      )}
    </Link>
  );
}
