import { type ComponentChildren, createContext } from "preact";
import { useContext, useEffect, useState } from "preact/hooks";
import { type Api, ApiError, answer, createApi, keyPrefix, type Schemas } from "./api";
import { ErrorNote, Loading, type Permission } from "./ui";

// The pages ask the session what they may do: its answer's type with it.
export type { Permission };

/*
 * Signing in: the key is checked with GET /profile and kept in the tab's sessionStorage only (gone when the tab
 * closes; never a cookie, localStorage or a URL). What the key may do comes from the API: GET /keys says whether it is
 * read-only, GET /organizations/{org_id} the role it acts in there.
 */

const KEY_ITEM = "console.api-key";

/** The key this tab is signed in with, if any. */
export const keptKey = () => sessionStorage.getItem(KEY_ITEM);
/** Signs this tab in with `key` from its next page on (an invitation accepted signs its invitee in). */
export const keepKey = (key: string) => sessionStorage.setItem(KEY_ITEM, key);

export type Role = Schemas["OrganizationDetails"]["role"];

export interface Session {
  api: Api;
  profile: Schemas["Profile"];
  readOnly: boolean;
  organizations: Schemas["Organization"][];
  /** An organization's details (role, workspaces), read once per sign-in. */
  organization(orgId: string): Promise<Schemas["OrganizationDetails"]>;
  signOut(): void;
}

const SessionContext = createContext<Session | undefined>(undefined);

export const useSession = () => useContext(SessionContext) as Session;

async function signIn(key: string, signOut: () => void): Promise<Session> {
  const api = createApi(key);
  const profile = await answer(api.GET("/profile"));
  const [organizations, keys] = await Promise.all([answer(api.GET("/organizations")), answer(api.GET("/keys"))]);
  const details = new Map<string, Promise<Schemas["OrganizationDetails"]>>();
  const organization = (orgId: string) => {
    if (!details.has(orgId))
      details.set(orgId, answer(api.GET("/organizations/{org_id}", { params: { path: { org_id: orgId } } })));
    return details.get(orgId) as Promise<Schemas["OrganizationDetails"]>;
  };
  const readOnly = keys.find((listed) => listed.prefix === keyPrefix(key))?.read_only ?? false;
  return { api, profile, readOnly, organizations, organization, signOut };
}

/** The console once signed in; the sign-in form until then. */
export function SessionGate({ children }: { children: ComponentChildren }) {
  const [session, setSession] = useState<Session>();
  const [error, setError] = useState<ApiError>();
  const [checking, setChecking] = useState(false);

  const signOut = () => {
    sessionStorage.removeItem(KEY_ITEM);
    setSession(undefined);
  };
  const tryKey = async (key: string) => {
    setChecking(true);
    setError(undefined);
    try {
      setSession(await signIn(key, signOut));
      keepKey(key);
    } catch (refused) {
      sessionStorage.removeItem(KEY_ITEM);
      setError(refused instanceof ApiError ? refused : new ApiError(0, "The service could not be reached"));
    } finally {
      setChecking(false);
    }
  };
  useEffect(() => {
    const kept = keptKey();
    if (kept) void tryKey(kept);
  }, []);

  if (session) return <SessionContext.Provider value={session}>{children}</SessionContext.Provider>;
  return (
    <main class="sign-in">
      <h1>App Management Service</h1>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          const key = new FormData(event.currentTarget).get("key");
          if (typeof key === "string" && key.trim()) void tryKey(key.trim());
        }}
      >
        <label for="api-key">API key</label>
        <input id="api-key" name="key" type="password" autocomplete="off" required aria-describedby="key-help" />
        <p id="key-help" class="help">
          Kept in this tab only, until you sign out or close it. Locally, the README's demo key works.
        </p>
        <button type="submit" disabled={checking}>
          {checking ? "Checking…" : "Sign in"}
        </button>
      </form>
      {checking && <Loading label="Checking the key" />}
      {error && <ErrorNote error={error} prefix="This key was refused" />}
    </main>
  );
}

export type Right = "edit" | "deploy" | "manage";

// docs/guides/teams.md: apps and configs for owner, workspace_admin, editor; deploy and revert for those and
// deployment_manager; members, invitations, webhooks, protection settings, and any change request's rebase or cancel
// for owner and workspace_admin.
const ROLES_WITH: Record<Right, Role[]> = {
  edit: ["owner", "workspace_admin", "editor"],
  deploy: ["owner", "workspace_admin", "editor", "deployment_manager"],
  manage: ["owner", "workspace_admin"],
};

const WHAT_RIGHTS_DO: Record<Right, string> = {
  edit: "change apps or configs",
  deploy: "deploy or revert",
  manage: "manage the team, webhooks or protection",
};

/** What the session may do in an organization (undefined while its role loads, or with no organization known). */
export function usePermissions(orgId: string | null | undefined): ((right: Right) => Permission) | undefined {
  const session = useSession();
  const [role, setRole] = useState<Role>();
  useEffect(() => {
    setRole(undefined);
    if (orgId) void session.organization(orgId).then((details) => setRole(details.role));
  }, [orgId]);
  if (session.readOnly) return () => ({ state: "hidden" });
  if (!role) return undefined;
  return (right) =>
    ROLES_WITH[right].includes(role)
      ? { state: "allowed" }
      : {
          state: "disabled",
          reason: `Your role here (${role.replace("_", " ")}) may not ${WHAT_RIGHTS_DO[right]}`,
        };
}
