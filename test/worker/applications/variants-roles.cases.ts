import { describe, expect, it } from "vitest";
import { applicationVariants } from "../client";
import { createAccount, createAppVia, createTeam, expectError, expectJson, FORBIDDEN, issueKey, markKeyUsed } from "../fixtures";
import { Tracker } from "../harness";

/*
 * Who may add a variant through today's SDK's VariantManager.create (POST /applications/variants/): the roles that
 * write configs (owner, workspace_admin, editor); a deployment manager deploys, and adds nothing.
 */

describe("POST /applications/variants/ by role", () => {
  it("a deployment manager's key is refused (403), nothing written; an editor's adds the variant", async () => {
    const [owner, manager, editor] = await Promise.all([createAccount(), createAccount(), createAccount()]);
    const team = await createTeam(owner, [
      [manager, "deployment_manager"],
      [editor, "editor"],
    ]);
    const [ownerKey, managerKey, editorKey] = await Promise.all(
      [owner, manager, editor].map((account) => issueKey(account.userId, team.projectId)),
    );
    await Promise.all([ownerKey, managerKey, editorKey].map(markKeyUsed));
    const appId = await createAppVia(ownerKey, { app_name: `variants-${crypto.randomUUID().slice(0, 8)}` });
    const body = { application_variant: { application_id: appId, slug: "support" } };

    const tracker = await Tracker.start();
    await expectError(await applicationVariants.add({ key: managerKey }, body), 403, FORBIDDEN);
    const keyed = { headers: { "Idempotency-Key": crypto.randomUUID() } };
    await expectError(await applicationVariants.add({ key: managerKey }, body, keyed), 403, FORBIDDEN);
    expect(await tracker.changes()).toEqual({});

    const added = await expectJson<{ application_variant: { slug: string; application_id: string } }>(
      await applicationVariants.add({ key: editorKey }, body),
    );
    expect(added.application_variant).toMatchObject({ slug: "support", application_id: appId });
  });
});
