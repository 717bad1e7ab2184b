import { useEffect, useState } from "preact/hooks";
import { answer, createApi, type Schemas } from "./api";
import { ShownOnce } from "./copy";
import { navigate } from "./router";
import { keepKey, keptKey } from "./session";
import { ErrorNote, Loading, useAction } from "./ui";

/*
 * An invitation accepted in the browser: the page the invitation mail links to, the API's accept path under the
 * console (`/console/organizations/{org}/workspaces/{workspace}/invite/accept?project_id=…#token=…`), needing no key
 * to open. The token travels in the fragment, which the browser sends to no server. A new person accepts with the
 * token alone: their account is made and its first key shown once, and the tab is signed in with it. A person with an
 * account signs in with their own key first (the API refuses another's), then accepts.
 */

const INVITATION_PATH = /^\/organizations\/([^/]+)\/workspaces\/([^/]+)\/invite\/accept\/?$/;

/** The invitation's organization and workspace when `path` is the accept page's. */
export function invitationAt(path: string): { orgId: string; workspaceId: string } | undefined {
  const match = INVITATION_PATH.exec(path);
  // Ids as they are: a malformed one is the API's 422 to show, not an escape to decode.
  return match ? { orgId: match[1], workspaceId: match[2] } : undefined;
}

type Accepted = Schemas["AcceptedInvitation"];

export function AcceptInvitation({ orgId, workspaceId }: { orgId: string; workspaceId: string }) {
  const query = new URLSearchParams(location.search);
  const projectId = query.get("project_id") ?? "";
  const token = new URLSearchParams(location.hash.slice(1)).get("token") ?? "";
  const [key, setKey] = useState(keptKey() ?? undefined);
  const [profile, setProfile] = useState<Schemas["Profile"]>();
  const [accepted, setAccepted] = useState<Accepted>();
  const signIn = useAction();
  const accept = useAction();
  const checkKey = (candidate: string) =>
    signIn.run(async () => {
      setProfile(await answer(createApi(candidate).GET("/profile")));
      keepKey(candidate);
      setKey(candidate);
    });
  useEffect(() => {
    if (key) void checkKey(key);
  }, []);
  const acceptWith = (withKey: string | undefined) =>
    accept.run(async () => {
      const done = await answer(
        createApi(withKey).POST("/organizations/{org_id}/workspaces/{workspace_id}/invite/accept", {
          params: { path: { org_id: orgId, workspace_id: workspaceId }, query: { project_id: projectId } },
          body: { token },
        }),
      );
      if (done.api_key) keepKey(done.api_key);
      setAccepted(done);
    });

  if (!token || !projectId)
    return (
      <main class="sign-in">
        <h1>Accept an invitation</h1>
        <p role="alert">
          This link holds no invitation: it may have been cut short. Open the link of the invitation mail whole, or ask for the
          invitation to be sent again.
        </p>
      </main>
    );
  if (accepted)
    return (
      <main class="sign-in">
        <h1>Invitation accepted</h1>
        <p role="status">
          {accepted.email} joined the organization as {accepted.role.replace("_", " ")}.
        </p>
        {accepted.api_key && <ShownOnce label="Your API key: the console and the API ask for it." secret={accepted.api_key} />}
        <p>
          <button type="button" class="primary" onClick={() => navigate(`/organizations/${accepted.organization_id}/team`)}>
            Continue to the console
          </button>
        </p>
      </main>
    );
  return (
    <main class="sign-in">
      <h1>Accept an invitation</h1>
      <p>You were invited to join an organization on the App Management Service.</p>
      {signIn.busy && <Loading label="Checking the key" />}
      {profile && key ? (
        <section aria-labelledby="as-member">
          <h2 id="as-member">Signed in as {profile.username}</h2>
          <p>
            <button type="button" class="primary" disabled={accept.busy} onClick={() => void acceptWith(key)}>
              Accept as {profile.username}
            </button>
            <button
              type="button"
              onClick={() => {
                setProfile(undefined);
                setKey(undefined);
              }}
            >
              Use another key
            </button>
          </p>
        </section>
      ) : (
        <>
          <section aria-labelledby="new-here">
            <h2 id="new-here">New here</h2>
            <p>Accepting makes your account and shows its first API key, once.</p>
            <button type="button" class="primary" disabled={accept.busy} onClick={() => void acceptWith(undefined)}>
              Accept and make my account
            </button>
          </section>
          <section aria-labelledby="have-account">
            <h2 id="have-account">I have an account</h2>
            <form
              onSubmit={(event) => {
                event.preventDefault();
                const entered = new FormData(event.currentTarget).get("key");
                if (typeof entered === "string" && entered.trim()) void checkKey(entered.trim());
              }}
            >
              <label for="invitee-key">Your API key</label>
              <input id="invitee-key" name="key" type="password" autocomplete="off" required />
              <button type="submit" disabled={signIn.busy}>
                Sign in
              </button>
            </form>
            {signIn.error && <ErrorNote error={signIn.error} prefix="This key was refused" />}
          </section>
        </>
      )}
      {accept.busy && <Loading label="Accepting" />}
      {accept.error && <ErrorNote error={accept.error} prefix="Not accepted" />}
    </main>
  );
}
