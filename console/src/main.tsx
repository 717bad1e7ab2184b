import { render } from "preact";
import { AwaitingCount } from "./awaiting";
import { AcceptInvitation, invitationAt } from "./invitation";
import { Link, matchPage, useLocation } from "./router";
import { SessionGate, useSession } from "./session";
import { labelTableCells } from "./table-labels";
import "./style.css";

function Shell() {
  const session = useSession();
  const { path, query } = useLocation();
  const found = matchPage(path);
  // The organization of the page's path, else the first: its change requests, activity and team.
  const orgId = /^\/organizations\/([^/]+)/.exec(path)?.[1] ?? session.organizations[0]?.id;
  return (
    <>
      <header class="top">
        <Link to="/" class="brand">
          App Management Service
        </Link>
        {orgId && (
          <nav aria-label="Organization" class="sections">
            <Link to={`/organizations/${orgId}/change-requests`}>Change requests</Link>
            <Link to={`/organizations/${orgId}/activity`}>Activity</Link>
            <Link to={`/organizations/${orgId}/team`}>Team</Link>
            <AwaitingCount orgId={orgId} path={path} />
          </nav>
        )}
        <span class="who">
          {session.profile.username}
          {session.readOnly && <span class="badge">read-only key</span>}
        </span>
        <button type="button" onClick={session.signOut}>
          Sign out
        </button>
      </header>
      <main>
        {found === "malformed" ? (
          <p role="alert">
            This link is malformed: a part of its address is not a valid escape (a % not followed by two hex digits of UTF-8). It
            may have been cut short or mistyped. <Link to="/">Go to the apps</Link>
          </p>
        ) : found ? (
          <found.Page key={path} params={found.params} query={query} />
        ) : (
          <p role="alert">
            No page here. <Link to="/">Go to the apps</Link>
          </p>
        )}
      </main>
    </>
  );
}

/** The console behind its sign-in; an invitation's accept page before it, since a new invitee has no key yet. */
function Root() {
  const invitation = invitationAt(useLocation().path);
  if (invitation) return <AcceptInvitation {...invitation} />;
  return (
    <SessionGate>
      <Shell />
    </SessionGate>
  );
}

const root = document.getElementById("console") as HTMLElement;
labelTableCells(root);
render(<Root />, root);
