import { render } from "preact";
import { Link, matchPage, useLocation } from "./router";
import { SessionGate, useSession } from "./session";
import "./style.css";

function Shell() {
  const session = useSession();
  const { path, query } = useLocation();
  const found = matchPage(path);
  return (
    <>
      <header class="top">
        <Link to="/" class="brand">
          App Management Service
        </Link>
        <span class="who">
          {session.profile.username}
          {session.readOnly && <span class="badge">read-only key</span>}
        </span>
        <button type="button" onClick={session.signOut}>
          Sign out
        </button>
      </header>
      <main>
        {found ? (
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

render(
  <SessionGate>
    <Shell />
  </SessionGate>,
  document.getElementById("console") as HTMLElement,
);
