import { beforeAll, describe, expect, it } from "vitest";
import { current } from "../client";
import {
  type Account,
  createAccount,
  createAppVia,
  createTeam,
  expectError,
  expectJson,
  FORBIDDEN,
  issueKey,
  legacyConfig,
  send,
  storedRevision,
} from "../fixtures";
import {
  asName,
  environmentName,
  expectCleanError,
  expectNoChange,
  expectRefused,
  injectionTarget,
  isAcceptableName,
  issueAt,
  PAYLOADS,
  quietRequestLog,
  UUID_ISSUE,
} from "../injection-payloads";

/*
 * Today's SDK's calls 10 to 15 (docs/CURRENT-SDK-API.md) against bad input: SQL in every ref's slug, id and version,
 * versions that are not numbers, unknown `data` keys, huge and deep bodies, another organization's ids, keys that may
 * only read. Each is refused in the documented shape or finds nothing, and nothing is written (every row of every
 * table compared).
 */

let owner: Account;
let key: string;
let appId: string;
let variantId: string;
const RUNS_NOTHING = "Environment revision does not contain application references for the requested key.";
let stranger: Account;

quietRequestLog();

beforeAll(async () => {
  ({ owner, key, appId, variantId } = await injectionTarget());
  stranger = await createAccount();
});

describe("SQL in every part of a ref", () => {
  it("retrieve: a slug finds nothing (a variant's: 200 {count: 0}; an app's or by environment: 404), an id or a version is a 422", async () => {
    const none = { status: 200, body: { count: 0 } };
    const noAppRevision = { status: 404, body: { detail: "Application revision not found." } };
    const runsNothing = { status: 404, body: { detail: RUNS_NOTHING } };
    for (const payload of PAYLOADS) {
      const bodies: [unknown, (string | number)[], { status: number; body: unknown } | null][] = [
        [{ application_ref: { slug: payload } }, ["body", "application_ref", "slug"], noAppRevision],
        [
          { application_ref: { id: appId }, application_variant_ref: { slug: payload } },
          ["body", "application_variant_ref", "slug"],
          none,
        ],
        [{ application_ref: { id: payload } }, ["body", "application_ref", "id"], null],
        [
          { application_ref: { id: appId }, application_revision_ref: { version: payload } },
          ["body", "application_revision_ref", "version"],
          null,
        ],
        [{ environment_ref: { slug: "production" }, key: `${payload}.revision` }, ["body", "key"], runsNothing],
        [
          { environment_ref: { slug: "production", id: payload }, key: "target.revision" },
          ["body", "environment_ref", "id"],
          null,
        ],
      ];
      for (const [body, loc, foundNothing] of bodies) {
        const response = await expectNoChange(() => current.retrieve({ key }, body));
        if (foundNothing && isAcceptableName(payload)) {
          const answer = { status: response.status, body: await response.json() };
          expect(answer, JSON.stringify(payload)).toEqual(foundNothing);
        } else {
          expect(response.status, JSON.stringify([payload, loc])).toBe(422);
          expect((await expectCleanError(response, payload)).detail).toContainEqual(issueAt(loc));
        }
      }
    }
  });

  it("deploy: an environment or variant slug finds nothing (404), an id is a 422; nothing is deployed", async () => {
    for (const payload of PAYLOADS) {
      const body = {
        application_ref: { id: appId },
        application_variant_ref: { id: variantId },
        environment_ref: { slug: "production" },
      };
      const [status, detail] = asName(
        ["body", "environment_ref", "slug"],
        404,
        "Environment revision not found.",
        environmentName,
      )(payload);
      await expectRefused(
        payload,
        () => current.deploy({ key }, { ...body, environment_ref: { slug: payload } }),
        status,
        detail,
      );
      const [variantStatus, variantDetail] = asName(
        ["body", "application_variant_ref", "slug"],
        404,
        "Application revision not found.",
      )(payload);
      const bySlug = { ...body, application_variant_ref: { slug: payload } };
      await expectRefused(payload, () => current.deploy({ key }, bySlug), variantStatus, variantDetail);
      const byId = { ...body, application_ref: { id: payload } };
      await expectRefused(
        payload,
        () => current.deploy({ key }, byId),
        422,
        issueAt(["body", "application_ref", "id"], UUID_ISSUE),
      );
    }
  });

  it("commit and log: an id is a 422; a slug outside the platform's rule too", async () => {
    for (const payload of PAYLOADS) {
      const commit = (revision: Record<string, unknown>) => ({
        application_revision: { application_variant_id: variantId, data: { parameters: {} }, ...revision },
      });
      const loc = ["body", "application_revision", "application_variant_id"];
      await expectRefused(
        payload,
        () => current.commit({ key }, commit({ application_variant_id: payload })),
        422,
        issueAt(loc, UUID_ISSUE),
      );
      if (!/^[A-Za-z0-9_-][A-Za-z0-9_.-]*$/.test(payload)) {
        await expectRefused(
          payload,
          () => current.commit({ key }, commit({ slug: payload })),
          422,
          issueAt(["body", "application_revision", "slug"]),
        );
      }
      const log = { application_revisions: { application_variant_id: payload } };
      await expectRefused(
        payload,
        () => current.log({ key }, log),
        422,
        issueAt(["body", "application_revisions", "application_variant_id"], UUID_ISSUE),
      );
    }
  });

  it("environments query: a slug finds nothing", async () => {
    for (const payload of PAYLOADS.filter(environmentName)) {
      const response = await expectNoChange(() => current.queryEnvironments({ key }, { environment: { slug: payload } }));
      expect(await expectJson(response)).toEqual({ count: 0, environments: [] });
    }
  });
});

describe("versions that are not revision numbers", () => {
  it.each(["abc", "1.5", "-1", "", " 1", "1e3", "0x1", "١", 1.5, -1, true, {}, "9999999999"])(
    "%j is a 422 at the version, nothing written",
    async (version) => {
      const loc = ["body", "application_revision_ref", "version"];
      const body = {
        application_ref: { id: appId },
        application_variant_ref: { id: variantId },
        application_revision_ref: { version },
      };
      await expectRefused(String(version), () => current.retrieve({ key }, body), 422, issueAt(loc));
      await expectRefused(
        String(version),
        () => current.deploy({ key }, { ...body, environment_ref: { slug: "staging" } }),
        422,
        issueAt(loc),
      );
      const environment = { environment_ref: { slug: "production", version }, key: "target.revision" };
      await expectRefused(
        String(version),
        () => current.retrieve({ key }, environment),
        422,
        issueAt(["body", "environment_ref", "version"]),
      );
    },
  );
});

describe("bodies", () => {
  const commit = (data: unknown, extra: Record<string, unknown> = {}) => ({
    application_revision: { application_variant_id: variantId, data, ...extra },
  });

  it("unknown data keys are refused by name, __proto__ and constructor too", async () => {
    const text = `{"application_revision": {"application_variant_id": "${variantId}", "data": {"parameters": {}, "__proto__": {"x": 1}, "constructor": 1}}}`;
    const response = await expectNoChange(() =>
      send("POST", "/applications/revisions/commit", { key, rawBody: text, headers: { "Content-Type": "application/json" } }),
    );
    expect(response.status).toBe(422);
    const { detail } = (await response.json()) as { detail: { loc: string[] }[] };
    expect(detail.map(({ loc }) => loc.at(-1)).sort()).toEqual(["__proto__", "constructor"]);
  });

  it("a huge body is a 413, parameters nested too deep or a deep ignored field a 422, nothing written", async () => {
    const huge = { parameters: { prompt: "x".repeat(300 * 1024) } };
    await expectRefused("", () => current.commit({ key }, commit(huge)), 413, "Request body is larger than 262144 bytes");
    await expectRefused(
      "",
      () => current.retrieve({ key }, { application_ref: { id: appId }, padding: "x".repeat(20 * 1024) }),
      413,
      "Request body is larger than 16384 bytes",
    );
    let deep: unknown = 1;
    for (let level = 0; level < 150; level++) deep = { deep };
    await expectRefused(
      "",
      () => current.commit({ key }, commit({ parameters: deep })),
      422,
      issueAt(["body", "application_revision", "data", "parameters"]),
    );
    let deeper: unknown = 1;
    for (let level = 0; level < 3000; level++) deeper = [deeper];
    const text = `{"application_revision": {"application_variant_id": "${variantId}", "data": {"parameters": {}}, "ignored": ${JSON.stringify(deeper)}}}`;
    const response = await expectNoChange(() =>
      send("POST", "/applications/revisions/commit", { key, rawBody: text, headers: { "Content-Type": "application/json" } }),
    );
    expect(response.status).toBe(422);
  });

  it("a body that is not an object, or names nothing, is a 422", async () => {
    for (const body of [[], "x", 1, null, {}]) {
      const response = await expectNoChange(() => current.commit({ key }, body));
      expect(response.status, JSON.stringify(body)).toBe(422);
    }
    const retrieve = await expectNoChange(() => current.retrieve({ key }, {}));
    expect(retrieve.status).toBe(422);
  });
});

describe("access: what the caller cannot see is absent, with the same answer", () => {
  it("another organization's ids answer exactly what ids of nothing answer", async () => {
    const revisionId = (await storedRevision(variantId, 1)).id;
    const pairs: [(id: string) => Promise<Response>, string][] = [
      [(id) => current.retrieve({ key: stranger.key }, { application_revision_ref: { id } }), revisionId],
      [(id) => current.retrieve({ key: stranger.key }, { application_ref: { id } }), appId],
      [(id) => current.retrieveWorkflow({ key: stranger.key }, { workflow_variant_ref: { id } }), variantId],
      [(id) => current.log({ key: stranger.key }, { application_revisions: { application_variant_id: id } }), variantId],
      [
        (id) =>
          current.commit(
            { key: stranger.key },
            { application_revision: { application_variant_id: id, data: { parameters: {} } } },
          ),
        variantId,
      ],
      [
        (id) => current.deploy({ key: stranger.key }, { application_ref: { id }, environment_ref: { slug: "production" } }),
        appId,
      ],
    ];
    for (const [request, theirs] of pairs) {
      const [absent, notYours] = await expectNoChange(async () => [await request(crypto.randomUUID()), await request(theirs)]);
      expect(notYours.status).toBe(absent.status);
      expect(await notYours.json()).toEqual(await absent.json());
    }
    const environment = await current.retrieve(
      { key: stranger.key },
      { environment_ref: { slug: "production" }, key: "target.revision" },
    );
    await expectError(environment, 404, RUNS_NOTHING);
  });

  it("a read-only key and a viewer read, but neither commit nor deploy", async () => {
    const viewer = await createAccount();
    const team = await createTeam(owner, [[viewer, "viewer"]]);
    const teamApp = await createAppVia(owner.key, { app_name: "read-only", organization_id: team.organizationId });
    const teamVariant = await legacyConfig(owner.key, teamApp, "main", { a: 1 });
    const readOnlyKey = await issueKey(owner.userId, owner.projectId, { readOnly: true });
    const commit = { application_revision: { application_variant_id: teamVariant, data: { parameters: {} } } };
    const deploy = { application_ref: { id: teamApp }, environment_ref: { slug: "production" } };
    for (const who of [readOnlyKey, viewer.key]) {
      await expectRefused("", () => current.commit({ key: who }, commit), 403, FORBIDDEN);
      await expectRefused("", () => current.deploy({ key: who }, deploy), 403, FORBIDDEN);
      const read = await current.retrieve({ key: who }, { application_ref: { id: teamApp } });
      expect(await expectJson(read)).toEqual({ count: 1, application_revision: await storedRevision(teamVariant, 2) });
    }
  });
});
