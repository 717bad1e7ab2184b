import { useEffect } from "preact/hooks";
import { navigate } from "../router";
import { useSession } from "../session";
import { ErrorNote, Loading, useLoad } from "../ui";

/** The console's root: the apps of the first workspace of the first organization. */
export const path = "/";

export default function Home() {
  const session = useSession();
  const first = session.organizations[0];
  const { data, error } = useLoad(async () => (first ? session.organization(first.id) : undefined), []);
  useEffect(() => {
    const workspace = data?.workspaces[0];
    if (workspace) navigate(`/organizations/${data.id}/workspaces/${workspace.id}`, { replace: true });
  }, [data]);
  if (error) return <ErrorNote error={error} />;
  if (!first || (data && data.workspaces.length === 0)) return <p>This key belongs to no organization with a workspace yet.</p>;
  return <Loading label="Loading your organizations" />;
}
