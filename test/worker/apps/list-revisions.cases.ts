import { beforeAll, describe, expect, it } from "vitest";
import {
  type Account,
  createAccount,
  createAppVia,
  createTeam,
  deploy,
  type EnvironmentRevisions,
  getRevisions,
  send,
} from "../fixtures";
import { databaseOf } from "../pool";

let account: Account;
let appId: string;
beforeAll(async () => {
  account = await createAccount();
  appId = await createAppVia(account.key, { app_name: "history" });
});

const RFC3339_MILLIS_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe("GET /apps/:app_id/revisions/:environment_name", () => {
  it("shows a new environment at revision 0, nothing deployed (JSON nulls), no entries", async () => {
    const response = await getRevisions(account.key, appId, "production");
    expect(response.status).toBe(200);
    expect(response.headers.get("Content-Type")).toMatch(/^application\/json/);
    const text = await response.text();
    expect(text).not.toContain('"None"');
    expect(JSON.parse(text)).toEqual({
      name: "production",
      app_id: appId,
      project_id: account.projectId,
      deployed_app_variant_id: null,
      deployed_variant_name: null,
      deployed_app_variant_revision_id: null,
      deployed_variant_archived: false,
      revision: 0,
      revisions: [],
      organization_id: account.organizationId,
      workspace_id: account.workspaceId,
    });
  });

  it("lists every deployment oldest first, numbered 1..n, with the current deployment on the record", async () => {
    const other = await createAccount();
    const team = await createTeam(account, [[other, "editor"]]);
    const teamApp = await createAppVia(account.key, { app_name: "team-history", organization_id: team.organizationId });
    const deployments = [
      await deploy(teamApp, "staging", "main", account),
      await deploy(teamApp, "staging", "experiment", account),
    ];
    const committed = await send("POST", "/variants/configs/commit", {
      key: account.key,
      body: { params: { temperature: 0.5 }, application_ref: { id: teamApp }, variant_ref: { slug: "main" } },
    });
    expect(committed.status).toBe(200);
    deployments.push(await deploy(teamApp, "staging", "main", other));
    expect(deployments.map((d) => d.revision)).toEqual([1, 2, 3]);

    const record = (await (await getRevisions(account.key, teamApp, "staging")).json()) as EnvironmentRevisions;
    expect(record.revision).toBe(3);
    expect(record.revisions.map((entry) => entry.revision)).toEqual([1, 2, 3]);
    expect(record.revisions.map((entry) => entry.id)).toEqual(deployments.map((d) => d.revisionId));
    expect(record.revisions.map((entry) => entry.modified_by)).toEqual([account.username, account.username, other.username]);
    for (const entry of record.revisions) {
      expect(Object.keys(entry).sort()).toEqual([
        "created_at",
        "deployed_app_variant_revision",
        "deployment",
        "id",
        "modified_by",
        "revision",
      ]);
      expect(entry.created_at).toMatch(RFC3339_MILLIS_UTC);
      expect(typeof entry.deployed_app_variant_revision).toBe("string");
      expect(typeof entry.deployment).toBe("string");
    }
    const createdAt = record.revisions.map((entry) => entry.created_at);
    expect([...createdAt].sort()).toEqual(createdAt);

    // The record names what is deployed now: the third deployment, of "main" at its latest, committed revision.
    expect(record.deployed_variant_name).toBe("app.main");
    expect(record.deployed_app_variant_revision_id).toBe(
      ((await committed.json()) as { variant_ref: { id: string } }).variant_ref.id,
    );
    expect(record.deployed_app_variant_revision_id).toBe(record.revisions[2].deployed_app_variant_revision);
    expect(record.revisions[0].deployed_app_variant_revision).not.toBe(record.revisions[2].deployed_app_variant_revision);
    const variant = await databaseOf(teamApp)
      .prepare("SELECT id FROM app_variants WHERE app_id = ? AND name = 'main'")
      .bind(teamApp)
      .first<{ id: string }>();
    expect(record.deployed_app_variant_id).toBe(variant?.id);
  });

  it("keeps each environment's history separate", async () => {
    await deploy(appId, "development", "main", account);
    const development = (await (await getRevisions(account.key, appId, "development")).json()) as EnvironmentRevisions;
    const production = (await (await getRevisions(account.key, appId, "production")).json()) as EnvironmentRevisions;
    expect(development.revisions).toHaveLength(1);
    expect(production.revisions).toHaveLength(0);
  });

  it("accepts the app id in upper case and a trailing slash", async () => {
    const response = await send("GET", `/apps/${appId.toUpperCase()}/revisions/production/`, { key: account.key });
    expect(response.status).toBe(200);
    expect(((await response.json()) as EnvironmentRevisions).app_id).toBe(appId);
  });

  it("answers 404 for an unknown environment, an unknown app, and an app of another organization", async () => {
    const outsider = await createAccount();
    const unknownApp = "01900000-0000-7000-8000-000000000000";
    const responses = [
      await getRevisions(account.key, appId, "qa"),
      await getRevisions(account.key, appId, "Production"),
      await getRevisions(account.key, unknownApp, "production"),
      await getRevisions(outsider.key, appId, "production"),
    ];
    for (const response of responses) {
      expect(response.status).toBe(404);
      expect(await response.json()).toEqual({ detail: "App environment not found" });
    }
  });

  it("answers 422 with loc path/app_id for an app id that is not a UUID", async () => {
    const response = await getRevisions(account.key, "not-a-uuid", "production");
    expect(response.status).toBe(422);
    expect(await response.json()).toEqual({
      detail: [{ loc: ["path", "app_id"], msg: "Input should be a valid UUID", type: "uuid_parsing" }],
    });
  });

  it("answers 422 with loc path/environment_name for control characters or an over-long name", async () => {
    for (const name of ["prod\u0007", "tab\there", "e".repeat(256)]) {
      const response = await getRevisions(account.key, appId, name);
      expect(response.status).toBe(422);
      const { detail } = (await response.json()) as { detail: { loc: unknown[] }[] };
      expect(detail.map((issue) => issue.loc)).toEqual([["path", "environment_name"]]);
    }
  });

  it("takes an encoded slash as part of the environment name (and finds no such environment)", async () => {
    const response = await getRevisions(account.key, appId, "prod/uction");
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ detail: "App environment not found" });
  });

  it("lists a history of 12,000 revisions, larger than D1's 2 MB cap on one string", async () => {
    const longAppId = await createAppVia(account.key, { app_name: "long-history" });
    await databaseOf(longAppId)
      .prepare(
        `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 12000)
       INSERT INTO environment_revisions (id, environment_id, revision, modified_by)
       SELECT printf('01960000-0000-7000-8000-%012d', i), e.id, i, ? FROM n, environments e WHERE e.app_id = ? AND e.name = 'production'`,
      )
      .bind(account.userId, longAppId)
      .run();
    await databaseOf(longAppId)
      .prepare("UPDATE environments SET revision = 12000 WHERE app_id = ? AND name = 'production'")
      .bind(longAppId)
      .run();

    const response = await getRevisions(account.key, longAppId, "production");
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text.length).toBeGreaterThan(2_000_000);
    const record = JSON.parse(text) as EnvironmentRevisions;
    expect(record.revision).toBe(12000);
    expect(record.revisions).toHaveLength(12000);
    expect(record.revisions.every((entry, index) => entry.revision === index + 1)).toBe(true);
  });
});
