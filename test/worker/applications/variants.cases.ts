import { beforeAll, describe, expect, it } from "vitest";
import { applicationVariants, apps, configs, current, deployments, registry, simpleApplications, variants } from "../client";
import {
  A_NEW_ID,
  A_TIME,
  type Account,
  createAccount,
  createTeamWithKeys,
  deploy,
  expectJson,
  FORBIDDEN,
  send,
  slugTakenDetail,
} from "../fixtures";
import { eventOfApp } from "../harness";
import { changesBy, expectNoChange, expectRefusedWith, expectWrite, issueAt } from "../injection-payloads";

/*
 * Today's SDK's VariantManager against the service (docs/CURRENT-SDK-API.md, calls 6 to 9, after call 2), replayed as
 * the SDK sends them (sdks/python/agenta/sdk/managers/shared.py of the platform's release 0.113), every answer whole;
 * and what archiving a variant does to the legacy API.
 */

interface Variant {
  id: string;
  slug: string;
  name: string;
  application_id: string;
  application_slug: string;
  artifact_id: string;
  artifact_slug: string;
  created_at: string;
  created_by_id?: string;
  updated_at: string;
  deleted_at?: string;
}
type OneVariant = { count: 1; application_variant: Variant };
type ManyVariants = { count: number; application_variants: Variant[] };
type OneApp = { count: 1; application: { id: string; slug: string } };

/** What SharedManager.add sends. */
const addBody = (applicationId: string, slug: string) => ({ application_variant: { application_id: applicationId, slug } });
/** What SharedManager resolves a variant with (call 7). */
const resolveBody = (appSlug: string, variantSlug: string) => ({
  application_refs: [{ slug: appSlug }],
  application_variant: { slug: variantSlug },
});

let owner: Account;
let app: OneApp["application"];
beforeAll(async () => {
  owner = await createAccount();
  app = (await expectJson<OneApp>(await simpleApplications.create(owner, { application: { slug: "vm-app", name: "vm-app" } })))
    .application;
});

describe("VariantManager, call by call", () => {
  it("create: the app by slug (2), the variant (6), then resolved (7); no revision, no legacy listing yet", async () => {
    const found = await expectJson<{ count: number; applications: { id: string; slug: string }[] }>(
      await simpleApplications.query(owner, { application: { slug: "vm-app" } }),
    );
    expect(found).toEqual({ count: 1, applications: [app] });

    const added = await changesBy(() => applicationVariants.add(owner, addBody(app.id, "first")));
    const variant = (await expectJson<OneVariant>(added.result)).application_variant;
    expect(variant).toEqual({
      id: A_NEW_ID,
      slug: "first",
      name: "first",
      application_id: app.id,
      application_slug: "vm-app",
      artifact_id: app.id,
      artifact_slug: "vm-app",
      created_at: A_TIME,
      updated_at: variant.created_at,
    });
    expectWrite(
      added.changed,
      { app_variants: [1, 0] },
      eventOfApp("config.added", owner, app.id, {
        app_id: app.id,
        app_name: "vm-app",
        config_name: "first",
        variant_id: variant.id,
        revision: null,
        revision_id: null,
        message: null,
      }),
    );

    const resolved = await expectJson<ManyVariants>(await applicationVariants.query(owner, resolveBody("vm-app", "first")));
    expect(resolved).toEqual({ count: 1, application_variants: [variant] });
    expect(await expectJson(await applicationVariants.get(owner, variant.id))).toEqual({
      count: 1,
      application_variant: variant,
    });
    // No revision until its first commit: the legacy API does not list it.
    expect(await expectJson(await apps.variants(owner, app.id))).toEqual([]);
    expect((await variants.get(owner, variant.id)).status).toBe(404);
  });

  it("its first revision (here by the older SDK's save) puts it in the legacy lists, as a commit of it", async () => {
    await expectJson(await applicationVariants.add(owner, addBody(app.id, "saved")));
    const saved = await changesBy(() =>
      registry.saveConfig(owner, { base_id: app.id, config_name: "saved", parameters: { temperature: 0.3 }, overwrite: false }),
    );
    expect(saved.result.status).toBe(200);
    const [variant] = (await expectJson<ManyVariants>(await applicationVariants.query(owner, resolveBody("vm-app", "saved"))))
      .application_variants;
    expectWrite(
      saved.changed,
      { app_variant_revisions: [1, 0] },
      eventOfApp("config.committed", owner, app.id, { config_name: "saved", variant_id: variant.id, revision: 1 }),
    );
    // Its author and last change are those of its revision 1 now.
    expect(variant).toEqual({
      id: A_NEW_ID,
      slug: "saved",
      name: "saved",
      application_id: app.id,
      application_slug: "vm-app",
      artifact_id: app.id,
      artifact_slug: "vm-app",
      created_at: A_TIME,
      created_by_id: owner.userId,
      updated_at: A_TIME,
    });
    expect(variant.updated_at >= variant.created_at).toBe(true);
    const listed = await expectJson<{ variant_id: string; revision: number; parameters: object }[]>(
      await apps.variants(owner, app.id),
    );
    expect(listed.map(({ variant_id, revision, parameters }) => ({ variant_id, revision, parameters }))).toEqual([
      { variant_id: variant.id, revision: 1, parameters: { temperature: 0.3 } },
    ]);
  });

  it("fork: the source's revision (10), its app (3), a new variant (6), resolved (7), its revision 1 as the source's (12)", async () => {
    type OneRevision = { count: 1; application_revision: { application_id: string; version: string; data: object } };
    const source = (await expectJson<OneVariant>(await applicationVariants.add(owner, addBody(app.id, "forked-from"))))
      .application_variant;
    const parameters = { prompt: "Be brief.", temperature: 0.1 };
    await expectJson(
      await current.commit(owner, {
        application_revision: { application_id: app.id, application_variant_id: source.id, data: { parameters } },
      }),
    );
    const fetched = (
      await expectJson<OneRevision>(
        await current.retrieve(owner, {
          resolve: true,
          application_ref: { slug: "vm-app" },
          application_variant_ref: { slug: "forked-from" },
        }),
      )
    ).application_revision;
    expect(fetched).toMatchObject({ application_id: app.id, version: "1", data: { parameters } });
    const { application } = await expectJson<OneApp>(await simpleApplications.get(owner, fetched.application_id));
    const fork = (
      await expectJson<OneVariant>(await applicationVariants.add(owner, addBody(application.id, "forked-from-fork-0a1b2c")))
    ).application_variant;
    const [resolved] = (
      await expectJson<ManyVariants>(await applicationVariants.query(owner, resolveBody("vm-app", "forked-from-fork-0a1b2c")))
    ).application_variants;
    expect(resolved.id).toBe(fork.id);
    const committed = await expectJson<OneRevision>(
      await current.commit(owner, {
        application_revision: { application_id: application.id, application_variant_id: resolved.id, data: fetched.data },
      }),
    );
    expect(committed.application_revision).toMatchObject({ version: "1", data: { parameters, url: "" } });
    // The fork is the source's config under the fork's name, in the legacy API too.
    const forkFetched = await expectJson<{ params: object; variant_ref: { slug: string; version: number } }>(
      await configs.call(owner, "fetch", {
        application_ref: { slug: "vm-app" },
        variant_ref: { slug: "forked-from-fork-0a1b2c" },
      }),
    );
    expect({ params: forkFetched.params, variant_ref: forkFetched.variant_ref }).toEqual({
      params: parameters,
      variant_ref: { slug: "forked-from-fork-0a1b2c", version: 1, id: expect.any(String) },
    });
  });

  it("delete: resolved (7), then archived (9), whose answer is the variant, not null", async () => {
    const variant = (await expectJson<OneVariant>(await applicationVariants.add(owner, addBody(app.id, "doomed"))))
      .application_variant;
    const [resolved] = (await expectJson<ManyVariants>(await applicationVariants.query(owner, resolveBody("vm-app", "doomed"))))
      .application_variants;
    const archived = await changesBy(() => applicationVariants.archive(owner, resolved.id));
    expect(await expectJson(archived.result)).toEqual({ count: 1, application_variant: { ...variant, deleted_at: A_TIME } });
    expectWrite(
      archived.changed,
      { app_variants: [1, 1] },
      eventOfApp("config.archived", owner, app.id, {
        app_id: app.id,
        app_name: "vm-app",
        config_name: "doomed",
        variant_id: variant.id,
      }),
    );
    expect(await expectJson(await applicationVariants.query(owner, resolveBody("vm-app", "doomed")))).toEqual({
      count: 0,
      application_variants: [],
    });
  });
});

describe("archived variants in both APIs", () => {
  let appId: string;
  let variantId: string;
  let variantRevisionId: string;
  let deployedRevisionId: string;
  beforeAll(async () => {
    appId = (
      await expectJson<OneApp>(await simpleApplications.create(owner, { application: { slug: "arch-app", name: "arch-app" } }))
    ).application.id;
    const deployed = await deploy(appId, "production", "main", owner);
    await deploy(appId, "staging", "other", owner);
    variantId = deployed.variantId;
    deployedRevisionId = deployed.revisionId;
    const revisions = await expectJson<{ id: string }[]>(await variants.revisions(owner, variantId));
    variantRevisionId = revisions[0].id;
    await expectJson(await applicationVariants.archive(owner, variantId));
  });

  it("leave lists and lookups by name; their ids and their revisions' ids still resolve", async () => {
    const listed = await expectJson<{ config_name: string }[]>(await apps.variants(owner, appId));
    expect(listed.map(({ config_name }) => config_name)).toEqual(["other"]);
    const byName = await configs.call(owner, "fetch", { application_ref: { id: appId }, variant_ref: { slug: "main" } });
    expect(byName.status).toBe(404);
    const byRevision = await configs.call(owner, "fetch", { variant_ref: { id: variantRevisionId } });
    expect(byRevision.status).toBe(200);
    expect((await variants.get(owner, variantId)).status).toBe(200);
    const query = await applicationVariants.query(owner, { application_refs: [{ id: appId }] });
    expect((await expectJson<ManyVariants>(query)).application_variants.map(({ slug }) => slug)).toEqual(["other"]);
    const all = await applicationVariants.query(owner, { application_refs: [{ id: appId }], include_archived: true });
    expect((await expectJson<ManyVariants>(all)).application_variants.map(({ slug }) => slug)).toEqual(["main", "other"]);
  });

  it("keep running where they run, and the environment record says so (ETag too)", async () => {
    const environments = await expectJson<
      { name: string; deployed_app_variant_id: string | null; deployed_variant_archived: boolean }[]
    >(await apps.environments(owner, appId));
    expect(
      environments.map(({ name, deployed_app_variant_id, deployed_variant_archived }) => [
        name,
        deployed_app_variant_id,
        deployed_variant_archived,
      ]),
    ).toEqual([
      ["development", null, false],
      ["staging", expect.any(String), false],
      ["production", variantId, true],
    ]);
    const record = await apps.revisions(owner, appId, "production");
    expect(await expectJson(record)).toMatchObject({
      deployed_app_variant_id: variantId,
      deployed_variant_archived: true,
      revision: 1,
    });
    const etag = String(record.headers.get("ETag"));
    expect(etag).toMatch(/\.1\.archived"$/);
    // The record changed when the variant was archived: the ETag of before names another state (no 304).
    const before = etag.replace(".archived", "");
    expect((await apps.revisions(owner, appId, "production", { headers: { "If-None-Match": before } })).status).toBe(200);
    expect((await apps.revisions(owner, appId, "production", { headers: { "If-None-Match": etag } })).status).toBe(304);
  });

  it("cannot be deployed again, through any deploy: 409, nothing written; nor saved to by name", async () => {
    const archived =
      "This revision belongs to an archived variant, which cannot be deployed again until it is unarchived " +
      "(POST /applications/variants/{variant_id}/unarchive): deploy another config, or unarchive it first";
    await expectRefusedWith(
      () =>
        deployments.deployConfig(owner, {
          variant_ref: { id: variantRevisionId },
          environment_ref: { slug: "development" },
        }),
      409,
      archived,
    );
    await expectRefusedWith(
      () => deployments.deployEnvironment(owner, { environment_name: "development", variant_id: variantId }),
      409,
      archived,
    );
    await expectRefusedWith(() => deployments.revert(owner, deployedRevisionId), 409, archived);
    await expectRefusedWith(
      () => registry.saveConfig(owner, { base_id: appId, config_name: "main", parameters: {}, overwrite: true }),
      409,
      "Config is archived: unarchive it (POST /applications/variants/{variant_id}/unarchive) to save to it again",
    );
    // The legacy DELETE keeps its own rule: a deployed variant is not removed.
    const removal = await expectNoChange(() => registry.removeVariant(owner, variantId));
    expect(removal.status).toBe(409);
  });

  it("are deployable again once unarchived, with their event", async () => {
    const unarchived = await changesBy(() => applicationVariants.unarchive(owner, variantId));
    expect(unarchived.result.status).toBe(200);
    expectWrite(
      unarchived.changed,
      { app_variants: [1, 1] },
      eventOfApp("config.unarchived", owner, appId, { config_name: "main", variant_id: variantId }),
    );
    const deployedAgain = await deployments.deployEnvironment(owner, { environment_name: "development", variant_id: variantId });
    expect(deployedAgain.status).toBe(200);
    await expectJson(await applicationVariants.archive(owner, variantId));
  });
});

describe("the legacy DELETE /variants/{variant_id}", () => {
  it("records config.removed in its batch", async () => {
    const variant = (await expectJson<OneVariant>(await applicationVariants.add(owner, addBody(app.id, "removable"))))
      .application_variant;
    const removed = await changesBy(() => registry.removeVariant(owner, variant.id));
    expect(removed.result.status).toBe(200);
    expectWrite(
      removed.changed,
      { app_variants: [1, 1] },
      eventOfApp("config.removed", owner, app.id, {
        app_id: app.id,
        app_name: "vm-app",
        config_name: "removable",
        variant_id: variant.id,
      }),
    );
    // A removed variant is not found by its id either.
    expect(await expectJson(await applicationVariants.get(owner, variant.id))).toEqual({ count: 0 });
    await expectRefusedWith(() => applicationVariants.archive(owner, variant.id), 404, "Variant not found");
  });
});

describe("add", () => {
  it("a slug the app has: 409 in the platform's shape, saying when that variant is archived", async () => {
    const live = (await expectJson<OneVariant>(await applicationVariants.add(owner, addBody(app.id, "twin"))))
      .application_variant;
    await expectRefusedWith(() => applicationVariants.add(owner, addBody(app.id, "twin")), 409, slugTakenDetail("twin", false));
    await expectJson(await applicationVariants.archive(owner, live.id));
    await expectRefusedWith(() => applicationVariants.add(owner, addBody(app.id, "twin")), 409, slugTakenDetail("twin", true));
  });

  it("checks the slug rule and the legacy name rules, a name other than the slug, and the wrapper key", async () => {
    for (const slug of ["with space", ".dot", "ü", ""]) {
      await expectRefusedWith(
        () => applicationVariants.add(owner, addBody(app.id, slug)),
        422,
        issueAt(["body", "application_variant", "slug"]),
      );
    }
    await expectRefusedWith(
      () => applicationVariants.add(owner, { application_variant: { application_id: app.id, slug: "s", name: "n" } }),
      422,
      issueAt(["body", "application_variant", "name"]),
    );
    await expectRefusedWith(() => applicationVariants.add(owner, { variant: { application_id: app.id, slug: "s" } }), 422, {
      loc: ["body"],
      msg: 'Value error, unknown key "variant": the keys here are "application_variant"',
      type: "value_error",
    });
  });

  it("replays a retry with its Idempotency-Key", async () => {
    const headers = { "Idempotency-Key": "variant-once" };
    const first = await expectJson(await applicationVariants.add(owner, addBody(app.id, "keyed"), { headers }));
    const retry = await expectNoChange(() => applicationVariants.add(owner, addBody(app.id, "keyed"), { headers }));
    expect(retry.headers.get("Idempotent-Replayed")).toBe("true");
    expect(await expectJson(retry)).toEqual(first);
  });

  it("with and without the trailing slash, and under BASE_PATH=/api", async () => {
    const bindings = { BASE_PATH: "/api" };
    for (const [i, [path, base]] of (
      [
        ["/applications/variants", {}],
        ["/api/applications/variants/", bindings],
        ["/api/applications/variants", bindings],
      ] as const
    ).entries()) {
      const added = await send("POST", path, { key: owner.key, body: addBody(app.id, `pathed-${i}`), bindings: base });
      const { application_variant } = await expectJson<OneVariant>(added);
      const prefix = path.startsWith("/api") ? "/api" : "";
      for (const suffix of ["", "/"]) {
        const read = await send("GET", `${prefix}/applications/variants/${application_variant.id}${suffix}`, {
          key: owner.key,
          bindings: base,
        });
        expect(await expectJson(read)).toEqual({ count: 1, application_variant });
      }
    }
  });
});

describe("access and bad input", () => {
  let outsider: Account;
  let viewerKey: string;
  let readOnlyKey: string;
  let teamAppId: string;
  let teamVariant: Variant;
  const absent = "01900000-0000-7000-8000-000000000000";
  beforeAll(async () => {
    const keys = await createTeamWithKeys(owner);
    ({ outsider, viewerKey, readOnlyKey } = keys);
    const teamKey = { key: keys.ownerKey };
    const created = await simpleApplications.create(teamKey, { application: { slug: "team", name: "team" } });
    teamAppId = (await expectJson<OneApp>(created)).application.id;
    teamVariant = (await expectJson<OneVariant>(await applicationVariants.add(teamKey, addBody(teamAppId, "shared"))))
      .application_variant;
  });

  it("another organization's app or variant answers exactly as one that does not exist", async () => {
    for (const id of [teamVariant.id, absent]) {
      expect(await expectJson(await expectNoChange(() => applicationVariants.get(outsider, id)))).toEqual({ count: 0 });
      await expectRefusedWith(() => applicationVariants.archive(outsider, id), 404, "Variant not found");
      await expectRefusedWith(() => applicationVariants.unarchive(outsider, id), 404, "Variant not found");
    }
    for (const id of [teamAppId, absent]) {
      await expectRefusedWith(() => applicationVariants.add(outsider, addBody(id, "intruder")), 404, "App not found");
      const query = await applicationVariants.query(outsider, { application_refs: [{ id }] });
      expect(await expectJson(query)).toEqual({ count: 0, application_variants: [] });
    }
    const byVariant = await applicationVariants.query(outsider, { application_variant_refs: [{ id: teamVariant.id }] });
    expect(await expectJson(byVariant)).toEqual({ count: 0, application_variants: [] });
  });

  it("a viewer and a read-only key read, and their writes are 403s that write nothing", async () => {
    for (const key of [viewerKey, readOnlyKey]) {
      expect(await expectJson(await applicationVariants.get({ key }, teamVariant.id))).toEqual({
        count: 1,
        application_variant: teamVariant,
      });
      const query = await applicationVariants.query({ key }, { application_refs: [{ slug: "team" }] });
      expect(await expectJson(query)).toEqual({ count: 1, application_variants: [teamVariant] });
      await expectRefusedWith(() => applicationVariants.add({ key }, addBody(teamAppId, "viewers")), 403, FORBIDDEN);
      await expectRefusedWith(() => applicationVariants.archive({ key }, teamVariant.id), 403, FORBIDDEN);
      await expectRefusedWith(() => applicationVariants.unarchive({ key }, teamVariant.id), 403, FORBIDDEN);
    }
  });

  it("non-UUID ids, malformed and unknown bodies, huge and deep ones: refused, nothing written", async () => {
    for (const id of ["not-a-uuid", "' OR 1=1 --"]) {
      const issue = issueAt(["path", "variant_id"], { type: "uuid_parsing" });
      await expectRefusedWith(() => applicationVariants.get(owner, id), 422, issue);
      await expectRefusedWith(() => applicationVariants.archive(owner, id), 422, issue);
      await expectRefusedWith(() => applicationVariants.unarchive(owner, id), 422, issue);
      await expectRefusedWith(
        () => applicationVariants.add(owner, addBody(id, "x")),
        422,
        issueAt(["body", "application_variant", "application_id"], { type: "uuid_parsing" }),
      );
    }
    const queries: [unknown, (string | number)[]][] = [
      [{ application_refs: [{}] }, ["body", "application_refs", 0]],
      [{ application_refs: [{ id: "x" }] }, ["body", "application_refs", 0, "id"]],
      [{ application_variant_refs: [{ slug: "a", version: "1" }] }, ["body", "application_variant_refs", 0, "version"]],
      [{ application_variant: { slug: "a", id: teamVariant.id } }, ["body", "application_variant"]],
      [{ application_variant: "main" }, ["body", "application_variant"]],
      [{ include_archived: 1 }, ["body", "include_archived"]],
    ];
    for (const [body, loc] of queries) await expectRefusedWith(() => applicationVariants.query(owner, body), 422, issueAt(loc));
    await expectRefusedWith(
      () => applicationVariants.add(owner, addBody(app.id, `v${"x".repeat(20_000)}`)),
      413,
      "Request body is larger than 16384 bytes",
    );
    let deep: unknown = addBody(app.id, "deep");
    for (let i = 0; i < 200; i++) deep = { application_variant: deep };
    const response = await expectNoChange(() => applicationVariants.add(owner, deep));
    expect(response.status).toBe(422);
  });
});
