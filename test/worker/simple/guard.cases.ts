import { v5 as uuidv5 } from "uuid";
import { beforeAll, describe, expect, it } from "vitest";
import { current, protection, simpleEnvironments } from "../client";
import {
  type Account,
  createAccount,
  createAppVia,
  createTeam,
  type Event,
  expectError,
  expectJson,
  FORBIDDEN,
  issueKey,
  legacyConfig,
  type Revision,
  send,
} from "../fixtures";
import { Tracker } from "../harness";

/*
 * The current API's view of protection (docs/CHANGE-REQUESTS.md §8): `flags.is_guarded`, one environment by id, guard
 * and unguard over the settings of §1; and today's SDK's DeploymentManager.deploy to a guarded environment.
 */

let owner: Account;
let team: Awaited<ReturnType<typeof createTeam>>;
let keys: Record<"owner" | "admin" | "editor" | "readOnly" | "outsider", string>;
let appId: string;
let mainId: string;
const idOf = (name: string) => uuidv5(name, team.projectId);

type One = { count: 1; environment: { id: string; name: string; flags: { is_guarded: boolean } } & Record<string, unknown> };

beforeAll(async () => {
  owner = await createAccount();
  const [admin, editor, outsider] = await Promise.all([createAccount(), createAccount(), createAccount()]);
  team = await createTeam(owner, [
    [admin, "workspace_admin"],
    [editor, "editor"],
  ]);
  keys = {
    owner: await issueKey(owner.userId, team.projectId),
    admin: await issueKey(admin.userId, team.projectId),
    editor: await issueKey(editor.userId, team.projectId),
    readOnly: await issueKey(owner.userId, team.projectId, { readOnly: true }),
    outsider: outsider.key,
  };
  appId = await createAppVia(keys.owner, { app_name: "sdk-app" });
  mainId = await legacyConfig(keys.owner, appId, "main", { temperature: 0.2 }, { temperature: 0.5 });
});

describe("guard and unguard", () => {
  it("GET by id answers the environment as the query does; 404 for an id of another project or none", async () => {
    const queried = await expectJson<{ environments: One["environment"][] }>(
      await current.queryEnvironments({ key: keys.editor }, { environment: { slug: "staging" } }),
    );
    expect(await expectJson(await simpleEnvironments.get({ key: keys.readOnly }, idOf("staging")))).toEqual({
      count: 1,
      environment: queried.environments[0],
    });
    for (const id of [uuidv5("staging", owner.projectId), uuidv5("qa", team.projectId)]) {
      await expectError(await simpleEnvironments.get({ key: keys.owner }, id), 404, "Environment not found");
    }
    await expectError(await simpleEnvironments.get({ key: keys.outsider }, idOf("staging")), 404, "Environment not found");
  });

  it("guard sets protected, keeping the other settings (a first guard: the defaults); unguard clears it; a no-op records nothing", async () => {
    const tracker = await Tracker.start();
    const guarded = await expectJson<One>(await simpleEnvironments.guard({ key: keys.owner }, idOf("production")));
    expect(guarded.environment).toMatchObject({ id: idOf("production"), name: "production", flags: { is_guarded: true } });
    const settings = (key = keys.editor) => protection.get({ key }, team.projectId, "production");
    expect(await expectJson(await settings())).toMatchObject({ protected: true, required_approvals: 1, request_ttl_days: 14 });
    // The query and GET by id say so too.
    const queried = await expectJson<{ environments: One["environment"][] }>(
      await current.queryEnvironments({ key: keys.editor }, { environment: { slug: "production" } }),
    );
    expect(queried.environments.map((environment) => environment.flags)).toEqual([{ is_guarded: true }]);
    expect(await expectJson(await simpleEnvironments.get({ key: keys.editor }, idOf("production")))).toEqual(guarded);

    // Guarded again: nothing changes, nothing is recorded.
    await tracker.changes();
    expect(await expectJson(await simpleEnvironments.guard({ key: keys.admin }, idOf("production")))).toEqual(guarded);
    expect(await tracker.changes()).toEqual({});

    await expectJson(
      await protection.put({ key: keys.owner }, team.projectId, "production", { protected: true, required_approvals: 3 }),
    );
    const unguarded = await expectJson<One>(await simpleEnvironments.unguard({ key: keys.admin }, idOf("production")));
    expect(unguarded.environment.flags).toEqual({ is_guarded: false });
    expect(await expectJson(await settings())).toMatchObject({ protected: false, required_approvals: 3 });
    const { events } = await expectJson<{ events: Event[] }>(
      await send("GET", "/events?type=environment.protection_changed", { key: keys.owner }),
    );
    expect(events.map((event) => [(event.data.before as any).protected, (event.data.after as any).protected])).toEqual([
      [true, false],
      [true, true],
      [false, true],
    ]);
  });

  it("403 for an editor and a read-only key, 404 for an outsider, writing nothing", async () => {
    const tracker = await Tracker.start();
    for (const key of [keys.editor, keys.readOnly]) {
      await expectError(await simpleEnvironments.guard({ key }, idOf("staging")), 403, FORBIDDEN);
      await expectError(await simpleEnvironments.unguard({ key }, idOf("staging")), 403, FORBIDDEN);
    }
    await expectError(await simpleEnvironments.guard({ key: keys.outsider }, idOf("staging")), 404, "Environment not found");
    expect(await tracker.changes()).toEqual({});
  });
});

describe("today's SDK against a guarded environment", () => {
  it("DeploymentManager.deploy gets the 409 (nothing deployed); its other calls keep working", async () => {
    await expectJson(await simpleEnvironments.guard({ key: keys.owner }, idOf("staging")));
    const as = { key: keys.owner };
    // 10: the SDK's fetch of the revision to deploy.
    const fetched = await expectJson<{ application_revision: Revision }>(
      await current.retrieve(as, {
        application_ref: { slug: "sdk-app" },
        application_variant_ref: { slug: "main" },
        application_revision_ref: { version: "2" },
      }),
    );
    const revision = fetched.application_revision;
    const tracker = await Tracker.start();
    // 14: what the SDK sends.
    const deployed = await current.deploy(as, {
      application_ref: { id: revision.application_id, slug: "sdk-app" },
      application_variant_ref: { id: revision.application_variant_id, slug: "main" },
      application_revision_ref: { version: revision.version },
      environment_ref: { slug: "staging" },
    });
    expect({ status: deployed.status, body: await deployed.json() }).toEqual({
      status: 409,
      body: {
        detail: {
          code: "environment_protected",
          app_id: appId,
          environment: "staging",
          message: "Environment 'staging' is protected: propose the change with POST /change-requests.",
          change_request_route: "POST /change-requests",
        },
      },
    });
    expect(await tracker.changes()).toEqual({});
    // Its reads and commits go on; another environment still deploys.
    await expectJson(await current.queryEnvironments(as, { environment: { slug: "staging" } }));
    await expectJson(
      await current.commit(as, {
        application_revision: { application_id: appId, application_variant_id: mainId, data: { parameters: { t: 0.9 } } },
      }),
    );
    await expectJson(
      await current.deploy(as, {
        application_ref: { id: appId },
        application_variant_ref: { id: mainId },
        environment_ref: { slug: "development" },
      }),
    );
  });
});
