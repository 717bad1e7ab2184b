import { beforeAll, describe, expect, it } from "vitest";
import { applicationVariants, configs, current, deployments, protection, registry, simpleApplications } from "../client";
import {
  type Account,
  type ConfigOutput,
  createAccount,
  createAppVia,
  createTeam,
  deploy,
  type Event,
  expectError,
  expectJson,
  issueKey,
  legacyConfig,
  send,
} from "../fixtures";
import { Tracker } from "../harness";

/*
 * What a protected environment refuses (docs/CHANGE-REQUESTS.md §2): every direct write that makes a revision of it
 * or removes it, for every role, owners included, with the 409 and nothing written; the same call on an unprotected
 * environment goes through. The emergency bypass (Protection-Bypass) and its event.
 */

let owner: Account;
let team: Awaited<ReturnType<typeof createTeam>>;
let keys: Record<"owner" | "admin" | "editor" | "deployer", string>;
let appId: string;
let mainId: string;
/** The revision production and staging each deployed first (`main` at its latest). */
let deployed: Record<"production" | "staging", string>;

const events = async (key: string, type: string) =>
  (await expectJson<{ events: Event[] }>(await send("GET", `/events?type=${type}`, { key }))).events;

beforeAll(async () => {
  owner = await createAccount();
  const [admin, editor, deployer] = await Promise.all([createAccount(), createAccount(), createAccount()]);
  team = await createTeam(owner, [
    [admin, "workspace_admin"],
    [editor, "editor"],
    [deployer, "deployment_manager"],
  ]);
  keys = {
    owner: await issueKey(owner.userId, team.projectId),
    admin: await issueKey(admin.userId, team.projectId),
    editor: await issueKey(editor.userId, team.projectId),
    deployer: await issueKey(deployer.userId, team.projectId),
  };
  appId = await createAppVia(keys.owner, { app_name: "guarded" });
  mainId = await legacyConfig(keys.owner, appId, "main", { temperature: 0.2 });
  deployed = {
    production: (await deploy(appId, "production", "main", owner)).revisionId,
    staging: (await deploy(appId, "staging", "main", owner)).revisionId,
  };
  await expectJson(await protection.put({ key: keys.owner }, team.projectId, "production", { protected: true }));
});

const refusal = (environment = "production", app = appId) => ({
  detail: {
    code: "environment_protected",
    app_id: app,
    environment,
    message: `Environment '${environment}' is protected: propose the change with POST /change-requests.`,
    change_request_route: "POST /change-requests",
  },
});

/** Each direct deploy or revert, to `environment`, as the key's holder, with `headers`. */
const DEPLOYS: Record<
  string,
  (key: string, environment: "production" | "staging", headers?: Record<string, string>) => Promise<Response>
> = {
  "POST /variants/configs/deploy": (key, environment, headers) =>
    deployments.deployConfig(
      { key },
      { application_ref: { id: appId }, variant_ref: { slug: "main" }, environment_ref: { slug: environment } },
      { headers },
    ),
  // The 2024 generated client's deploy.
  "POST /environments/deploy": (key, environment, headers) =>
    deployments.deployEnvironment({ key }, { environment_name: environment, variant_id: mainId }, { headers }),
  "POST /configs/deployment/{id}/revert": (key, environment, headers) =>
    deployments.revert({ key }, deployed[environment], { headers }),
  // Today's SDK's DeploymentManager.deploy, as it sends it.
  "POST /applications/revisions/deploy": (key, environment, headers) =>
    current.deploy(
      { key },
      {
        application_ref: { id: appId, slug: "guarded" },
        application_variant_ref: { id: mainId, slug: "main" },
        application_revision_ref: { version: "2" },
        environment_ref: { slug: environment },
      },
      { headers },
    ),
};

describe("a protected environment", () => {
  it("refuses each direct deploy and revert with the 409, writing nothing and keeping no Idempotency-Key; staging takes the same call", async () => {
    const tracker = await Tracker.start();
    for (const [route, request] of Object.entries(DEPLOYS)) {
      const headers = { "Idempotency-Key": `protected ${route}` };
      const response = await request(keys.owner, "production", headers);
      expect({ route, status: response.status, body: await response.json() }).toEqual({ route, status: 409, body: refusal() });
      expect(await tracker.changes(), route).toEqual({});
      // The key was kept for nothing: the same key on another request is that request's, not a 422.
      await expectJson(await request(keys.owner, "staging", headers));
      await tracker.changes();
    }
  });

  it("refuses every role, owners included, and before If-Match: a stale ETag still gets the 409", async () => {
    const tracker = await Tracker.start();
    for (const key of [keys.admin, keys.editor, keys.deployer]) {
      expect(await (await DEPLOYS["POST /variants/configs/deploy"](key, "production")).json()).toEqual(refusal());
    }
    const stale = { "If-Match": `"${"0".repeat(36)}.1"` };
    expect(await (await DEPLOYS["POST /environments/deploy"](keys.owner, "production", stale)).json()).toEqual(refusal());
    expect(await tracker.changes()).toEqual({});
  });

  it("refuses POST /configs when the save would deploy to production (overwrite, or params still {}); a new name passes", async () => {
    await legacyConfig(keys.owner, appId, "empty");
    const tracker = await Tracker.start();
    const save = (config_name: string, overwrite: boolean) =>
      registry.saveConfig({ key: keys.owner }, { base_id: appId, config_name, parameters: { t: 1 }, overwrite });
    for (const [name, overwrite] of [
      ["main", true],
      ["empty", false],
    ] as const) {
      const response = await save(name, overwrite);
      expect({ status: response.status, body: await response.json() }).toEqual({ status: 409, body: refusal() });
    }
    expect(await tracker.changes()).toEqual({});
    // A taken name without overwrite is the save's own 400, as before; a new name deploys nothing and passes.
    expect((await save("main", false)).status).toBe(400);
    expect(await expectJson(await save("fresh", false))).toBeNull();
  });

  it("refuses DELETE /apps/{app_id} while a protected environment of it runs a config; an app whose runs none is deleted", async () => {
    const tracker = await Tracker.start();
    expect(await (await send("DELETE", `/apps/${appId}`, { key: keys.owner })).json()).toEqual(refusal());
    expect(await tracker.changes()).toEqual({});
    const idle = await createAppVia(keys.owner, { app_name: "idle" });
    await deploy(idle, "staging", "main", owner);
    expect(await expectJson(await send("DELETE", `/apps/${idle}`, { key: keys.owner }))).toBeNull();
  });

  it("lets the same calls through where production is not protected (another project)", async () => {
    const other = await createAppVia(owner.key, { app_name: "free" });
    const variantId = await legacyConfig(owner.key, other, "main", { t: 1 });
    const first = await deploy(other, "production", "main", owner);
    const as = { key: owner.key };
    await expectJson(
      await deployments.deployConfig(as, {
        application_ref: { id: other },
        variant_ref: { slug: "main" },
        environment_ref: { slug: "production" },
      }),
    );
    await expectJson(await deployments.deployEnvironment(as, { environment_name: "production", variant_id: variantId }));
    await expectJson(await deployments.revert(as, first.revisionId));
    await expectJson(
      await current.deploy(as, {
        application_ref: { id: other },
        application_variant_ref: { id: variantId },
        environment_ref: { slug: "production" },
      }),
    );
    await expectJson(
      await registry.saveConfig(as, { base_id: other, config_name: "main", parameters: { t: 2 }, overwrite: true }),
    );
    await expectJson(await send("DELETE", `/apps/${other}`, as));
  });
});

describe("Protection-Bypass", () => {
  const bypass = (reason: string) => ({ "Protection-Bypass": reason });

  it("from a role in bypass_roles: deploys, with environment.protection_bypassed in the same write; another role 403; none: 409", async () => {
    await expectJson(
      await protection.put({ key: keys.owner }, team.projectId, "production", { protected: true, bypass_roles: ["owner"] }),
    );
    const tracker = await Tracker.start();
    await expectError(
      await DEPLOYS["POST /variants/configs/deploy"](keys.admin, "production", bypass("Hotfix")),
      403,
      "Bypassing the protection of this environment is not allowed for your role.",
    );
    expect(await (await DEPLOYS["POST /variants/configs/deploy"](keys.owner, "production")).json()).toEqual(refusal());
    expect(await tracker.changes()).toEqual({});

    const answer = await DEPLOYS["POST /applications/revisions/deploy"](
      keys.owner,
      "production",
      bypass("Incident 4711: roll forward"),
    );
    await expectJson(answer);
    // Ignored on an unprotected environment: a deploy, no bypass recorded.
    await expectJson(await DEPLOYS["POST /environments/deploy"](keys.admin, "staging", bypass("not needed")));
    const [bypassed, ...none] = await events(keys.owner, "environment.protection_bypassed");
    expect(none).toEqual([]);
    const [latestProduction] = (await events(keys.owner, "environment.deployed")).filter(
      (event) => event.data.environment === "production",
    );
    expect(bypassed).toMatchObject({
      project_id: team.projectId,
      actor: { user_id: owner.userId },
      data: {
        app_id: appId,
        app_name: "guarded",
        environment: "production",
        environment_revision_id: latestProduction.data.environment_revision_id,
        reason: "Incident 4711: roll forward",
      },
    });
    expect(Object.keys(bypassed.data).sort()).toEqual(["app_id", "app_name", "environment", "environment_revision_id", "reason"]);
  });

  it("422 at the header for a reason empty, too long or with a control character, before anything is written", async () => {
    const tracker = await Tracker.start();
    for (const reason of ["", "x".repeat(501), "tab\there"]) {
      const response = await DEPLOYS["POST /variants/configs/deploy"](keys.owner, "production", bypass(reason));
      expect(response.status, reason).toBe(422);
      expect(((await response.json()) as { detail: { loc: string[] }[] }).detail.map((issue) => issue.loc)).toEqual([
        ["header", "Protection-Bypass"],
      ]);
    }
    expect(await tracker.changes()).toEqual({});
    await expectJson(await DEPLOYS["POST /variants/configs/deploy"](keys.owner, "staging", bypass("x".repeat(500))));
  });

  it("422 at the header for a reason that is not UTF-8, before anything is written; UTF-8 text is recorded as sent", async () => {
    const tracker = await Tracker.start();
    // The bytes "caf\xe9" as the runtime hands them (it decodes a header as UTF-8, U+FFFD for what is not): the README's
    // protection walk-through sends them as bytes, through wrangler dev.
    const response = await DEPLOYS["POST /variants/configs/deploy"](keys.owner, "production", bypass("caf\uFFFD"));
    expect({ status: response.status, body: await response.json() }).toEqual({
      status: 422,
      body: {
        detail: [
          {
            loc: ["header", "Protection-Bypass"],
            msg: "Value error, Protection-Bypass must be UTF-8 text: bytes that are not UTF-8 are refused (U+FFFD too)",
            type: "value_error",
          },
        ],
      },
    });
    expect(await tracker.changes()).toEqual({});

    await expectJson(await DEPLOYS["POST /variants/configs/deploy"](keys.owner, "production", bypass("café ☕ 4712")));
    const reasons = (await events(keys.owner, "environment.protection_bypassed")).map((event) => event.data.reason);
    expect(reasons).toContain("café ☕ 4712");
  });

  it("deletes an app running configs in protected environments, one bypass event for each", async () => {
    const doomed = await createAppVia(keys.owner, { app_name: "doomed" });
    await legacyConfig(keys.owner, doomed, "main");
    for (const environment of ["production", "staging"]) {
      const body = { application_ref: { id: doomed }, variant_ref: { slug: "main" }, environment_ref: { slug: environment } };
      await expectJson(await deployments.deployConfig({ key: keys.owner }, body, { headers: bypass("seed") }));
    }
    await expectJson(
      await protection.put({ key: keys.owner }, team.projectId, "staging", { protected: true, bypass_roles: ["owner"] }),
    );
    expect(await (await send("DELETE", `/apps/${doomed}`, { key: keys.owner })).json()).toEqual(refusal("production", doomed));
    expect(await expectJson(await send("DELETE", `/apps/${doomed}`, { key: keys.owner, headers: bypass("Retired") }))).toBeNull();
    const recorded = (await events(keys.owner, "environment.protection_bypassed"))
      .filter((event) => event.data.app_id === doomed && event.data.reason === "Retired")
      .map((event) => event.data.environment);
    expect(recorded.sort()).toEqual(["production", "staging"]);
  });
});

/*
 * The writes that change what a protected environment answers without deploying to it (docs/CHANGE-REQUESTS.md §2):
 * the app's name is every fetch's `application_ref.slug`, and a lookup by name finds neither an archived app nor an
 * app under its old name. Each is held to a deploy's rule.
 */
describe("a write that changes what a protected environment answers, without deploying to it", () => {
  const bypass = (reason: string) => ({ "Protection-Bypass": reason });
  type App = { id: string; name: string };

  /** What production answers for the app, fetched by name as a client reads it when it starts. */
  const productionAnswer = async (app: App) => {
    const response = await configs.call({ key: keys.owner }, "fetch", {
      application_ref: { slug: app.name },
      environment_ref: { slug: "production" },
    });
    return { status: response.status, body: await response.json() };
  };

  /** Each app write, as the key's holder, with `headers`; a rename's new name is the app's with a suffix. */
  const WRITES: Record<string, (key: string, app: App, headers?: Record<string, string>) => Promise<Response>> = {
    "PATCH /apps/{app_id}": (key, app, headers) =>
      send("PATCH", `/apps/${app.id}`, { key, headers, body: { app_name: `${app.name}-renamed` } }),
    // Today's SDK's AppManager.update.
    "PUT /simple/applications/{id}": (key, app, headers) =>
      simpleApplications.edit(
        { key },
        app.id,
        { application: { id: app.id, slug: `${app.name}-x`, name: `${app.name}-x` } },
        { headers },
      ),
    // Today's SDK's AppManager.delete.
    "POST /simple/applications/{id}/archive": (key, app, headers) => simpleApplications.archive({ key }, app.id, { headers }),
    "POST /simple/applications/{id}/unarchive": (key, app, headers) => simpleApplications.unarchive({ key }, app.id, { headers }),
    "DELETE /apps/{app_id}": (key, app, headers) => send("DELETE", `/apps/${app.id}`, { key, headers }),
  };

  /** Per write: an app whose protected production runs `main`, and one whose production runs nothing (staging does). */
  const apps: Record<string, { guarded: App; idle: App }> = {};
  /** An app whose protected production runs `main` (`variantId`), for the writes that leave its answer as it is. */
  let steady: App & { variantId: string };

  /** A new app of the team's project named `name`, its config `main` deployed to production (with a bypass). */
  const runningApp = async (name: string) => {
    const id = await createAppVia(keys.owner, { app_name: name });
    const variantId = await legacyConfig(keys.owner, id, "main", { temperature: 0.3 });
    const body = { application_ref: { id }, variant_ref: { slug: "main" }, environment_ref: { slug: "production" } };
    await expectJson(await deployments.deployConfig({ key: keys.owner }, body, { headers: bypass("setting up") }));
    return { id, name, variantId };
  };

  beforeAll(async () => {
    await expectJson(
      await protection.put({ key: keys.owner }, team.projectId, "production", { protected: true, bypass_roles: ["owner"] }),
    );
    await expectJson(await protection.put({ key: keys.owner }, team.projectId, "staging", { protected: false }));
    steady = await runningApp("steady");
    for (const [index, path] of Object.keys(WRITES).entries()) {
      const guarded = await runningApp(`answered-${index}`);
      const idle = { id: "", name: `staged-${index}` };
      idle.id = await createAppVia(keys.owner, { app_name: idle.name });
      await deploy(idle.id, "staging", "main", owner);
      if (path.endsWith("/unarchive")) {
        for (const app of [guarded, idle]) {
          await expectJson(await simpleApplications.archive({ key: keys.owner }, app.id, { headers: bypass("setting up") }));
        }
      }
      apps[path] = { guarded, idle };
    }
  });

  it.each(Object.keys(WRITES))(
    "%s: 409 for every role, nothing written, production answering as before; a bypass writes it with its event; an app whose protected environments run nothing takes it",
    async (path) => {
      const write = WRITES[path];
      const { guarded, idle } = apps[path];
      const before = await productionAnswer(guarded);
      // By id, which finds an archived app too: the revision production is at.
      const runs = await expectJson<ConfigOutput>(
        await configs.call({ key: keys.owner }, "fetch", {
          application_ref: { id: guarded.id },
          environment_ref: { slug: "production" },
        }),
      );
      const tracker = await Tracker.start();
      const headers = { "Idempotency-Key": `answer ${path}` };
      for (const key of [keys.editor, keys.admin, keys.owner]) {
        const response = await write(key, guarded, headers);
        expect({ status: response.status, body: await response.json() }).toEqual({
          status: 409,
          body: refusal("production", guarded.id),
        });
      }
      await expectError(
        await write(keys.admin, guarded, { ...headers, ...bypass("Not mine to bypass") }),
        403,
        "Bypassing the protection of this environment is not allowed for your role.",
      );
      expect(await tracker.changes()).toEqual({});
      expect(await productionAnswer(guarded)).toEqual(before);

      // The Idempotency-Key kept nothing: the same key with a bypass is answered as a request of its own.
      await expectJson(await write(keys.owner, guarded, { ...headers, ...bypass(`Retiring ${path}`) }));
      expect(await productionAnswer(guarded)).not.toEqual(before);
      const recorded = (await events(keys.owner, "environment.protection_bypassed")).filter(
        (event) => event.data.reason === `Retiring ${path}`,
      );
      expect(recorded.map((event) => event.data)).toEqual([
        {
          app_id: guarded.id,
          app_name: guarded.name,
          environment: "production",
          environment_revision_id: runs.environment_ref?.id,
          reason: `Retiring ${path}`,
        },
      ]);

      // Production runs nothing there, staging is not protected: the editor's write goes through, no bypass needed.
      await expectJson(await write(keys.editor, idle));
    },
  );

  it("lets through what leaves production's answer as it is: its variant archived or committed to, the app renamed to its own name or unarchived while live; the variant it runs is never removed, bypass or not", async () => {
    const before = await productionAnswer(steady);
    await expectError(
      await registry.removeVariant({ key: keys.owner }, steady.variantId, { headers: bypass("Not a protection matter") }),
      409,
      "Variant is deployed to production: deploy another variant there first, then remove this one",
    );
    await expectJson(await applicationVariants.archive({ key: keys.editor }, steady.variantId));
    expect(await productionAnswer(steady)).toEqual(before);
    await expectJson(await applicationVariants.unarchive({ key: keys.editor }, steady.variantId));
    const commit = { application_ref: { id: steady.id }, variant_ref: { slug: "main" }, params: { temperature: 0.9 } };
    await expectJson(await configs.call({ key: keys.editor }, "commit", commit));
    expect(await productionAnswer(steady)).toEqual(before);

    // A write that changes nothing changes no answer: it passes, and writes nothing.
    const tracker = await Tracker.start();
    await expectJson(await send("PATCH", `/apps/${steady.id}`, { key: keys.editor, body: { app_name: steady.name } }));
    await expectJson(await simpleApplications.unarchive({ key: keys.editor }, steady.id));
    expect(await tracker.changes()).toEqual({});
    expect(await productionAnswer(steady)).toEqual(before);
  });
});
