import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createAccount, expectJson, type IssuedInvitation, invite, send } from "../fixtures";

/*
 * A keyless accept makes a user of a new email (docs/SHARDING.md §3.3): the email is claimed in the directory first,
 * and confirmed once the user is made, so that the directory's row is no longer pending: the next claim of the email
 * finds it settled without asking the user's shard.
 */

describe("a keyless accept of a new email", () => {
  it("leaves the directory's row of the email confirmed, the new user's", async () => {
    const owner = await createAccount();
    const email = `keyless-${crypto.randomUUID().slice(0, 8)}@example.com`;
    const invitation = await expectJson<IssuedInvitation>(
      await invite(owner.key, owner.organizationId, owner.workspaceId, email, "editor"),
    );
    const path = `/organizations/${invitation.organization_id}/workspaces/${invitation.workspace_id}/invite/accept`;
    const accepted = await send("POST", `${path}?project_id=${invitation.project_id}`, {
      authorization: "",
      body: { token: invitation.token },
      settled: true,
    });
    const joined = await expectJson<{ user_id: string }>(accepted);
    const row = await env.DIRECTORY.prepare("SELECT id, email, pending_until FROM users WHERE email = ?").bind(email).first();
    expect(row).toEqual({ id: joined.user_id, email, pending_until: null });
  });
});
