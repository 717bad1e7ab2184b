import { beforeAll, describe, expect, it } from "vitest";
import { bareKey, type Credentials, deployments, diffs } from "../client";
import {
  type Account,
  createAccount,
  createAppVia,
  createTeam,
  createTeamWithKeys,
  deploy,
  expectError,
  expectJson,
  getRevisions,
  issueKey,
  newId,
  parseKeepingNumbers,
  postConfigText,
} from "../fixtures";
import { bucketFor, databaseOf } from "../pool";

/*
 * GET /diff/configs and /diff/environments (docs/CHANGE-REQUESTS.md §5) through HTTP: whole answers, numbers digit for
 * digit from a commit to the diff, who may read them, and the 404 that tells nothing apart.
 */

const n = (text: string) => ({ number: text });

// The first revision's params and the second's, keys in another order; every number as sent.
const FIRST = '{"temperature":0.7,"model":"a","big":9007199254740993,"one":1.0,"list":[1,2,3],"a/b~c":{"x":null}}';
const SECOND = '{"list":[1,5],"model":"a","one":1,"big":9007199254740995,"temperature":0.7,"a/b~c":{},"new":{"k":[]}}';
const SECOND_REORDERED = '{"new":{"k":[]},"a/b~c":{},"temperature":0.7,"big":9007199254740995,"one":1,"model":"a","list":[1,5]}';

/** The patch and changes of FIRST → SECOND (keys in ascending order, array tail removed at the end). */
const FIRST_TO_SECOND = {
  identical: false,
  coarse: false,
  patch: [
    { op: "remove", path: "/params/a~1b~0c/x" },
    { op: "replace", path: "/params/big", value: n("9007199254740995") },
    { op: "replace", path: "/params/list/1", value: n("5") },
    { op: "remove", path: "/params/list/2" },
    { op: "add", path: "/params/new", value: { k: [] } },
    { op: "replace", path: "/params/one", value: n("1") },
  ],
  changes: [
    { path: "/params/a~1b~0c/x", op: "remove", from: null, to: null },
    { path: "/params/big", op: "replace", from: n("9007199254740993"), to: n("9007199254740995") },
    { path: "/params/list/1", op: "replace", from: n("2"), to: n("5") },
    { path: "/params/list/2", op: "remove", from: n("3"), to: null },
    { path: "/params/new", op: "add", from: null, to: { k: [] } },
    { path: "/params/one", op: "replace", from: n("1.0"), to: n("1") },
  ],
};

let owner: Account;
let keys: Awaited<ReturnType<typeof createTeamWithKeys>>;
let appId: string;
/** The config revisions committed, by params. */
const revisions: Record<"first" | "second" | "reordered", { id: string; revision: number }> = {} as never;
/** Staging's revisions: 1 (first), 2 (second). */
const staging: string[] = [];
/** Development's revision 1, which deployed nothing (as no deploy makes one, but the schema allows: by SQL). */
let nothingDeployed: string;

/** Commits `params` (text, numbers as written) to config main of the app; its revision. */
async function commit(params: string) {
  const text = `{"params":${params},"variant_ref":{"slug":"main"},"application_ref":{"id":"${appId}"}}`;
  const committed = await expectJson<{ variant_ref: { id: string; version: number } }>(
    await postConfigText("commit", keys.ownerKey, text),
  );
  return { id: committed.variant_ref.id, revision: committed.variant_ref.version };
}

/** An answer's body with each number as `{ number: "<its text>" }`, once its status is checked. */
async function readKeepingNumbers(response: Response, status = 200) {
  const text = await response.text();
  expect(response.status, text).toBe(status);
  return parseKeepingNumbers(text);
}

beforeAll(async () => {
  owner = await createAccount();
  keys = await createTeamWithKeys(owner);
  appId = await createAppVia(keys.ownerKey, { app_name: "diffed" });
  await expectJson(
    await postConfigText("add", keys.ownerKey, `{"variant_ref":{"slug":"main"},"application_ref":{"id":"${appId}"}}`),
  );
  revisions.first = await commit(FIRST);
  revisions.second = await commit(SECOND);
  revisions.reordered = await commit(SECOND_REORDERED);
  for (const { revision } of [revisions.first, revisions.second]) {
    const body = {
      application_ref: { id: appId },
      variant_ref: { slug: "main", version: revision },
      environment_ref: { slug: "staging" },
    };
    await expectJson(await deployments.deployConfig({ key: keys.ownerKey }, body));
  }
  const record = await expectJson<{ revisions: { id: string }[] }>(await getRevisions(keys.ownerKey, appId, "staging"));
  staging.push(...record.revisions.map(({ id }) => id));
  nothingDeployed = newId(bucketFor(appId));
  await databaseOf(appId)
    .prepare(
      `INSERT INTO environment_revisions (id, environment_id, revision, modified_by)
       SELECT ?, id, 1, ? FROM environments WHERE app_id = ? AND name = 'development'`,
    )
    .bind(nothingDeployed, owner.userId, appId)
    .run();
});

const configSide = (which: keyof typeof revisions) => ({
  id: revisions[which].id,
  config_name: "main",
  revision: n(String(revisions[which].revision)),
});

describe("GET /diff/configs", () => {
  it("answers the patch of one revision's document to another's, every number as committed", async () => {
    const query = { from: revisions.first.id, to: revisions.second.id };
    expect(await readKeepingNumbers(await diffs.configs({ key: keys.ownerKey }, query))).toEqual({
      from: configSide("first"),
      to: configSide("second"),
      ...FIRST_TO_SECOND,
    });
  });

  it("answers identical for the same params written in another key order, and for a revision with itself", async () => {
    const reordered = await readKeepingNumbers(
      await diffs.configs({ key: keys.ownerKey }, { from: revisions.second.id, to: revisions.reordered.id }),
    );
    expect(reordered).toEqual({
      from: configSide("second"),
      to: configSide("reordered"),
      identical: true,
      coarse: false,
      patch: [],
      changes: [],
    });
    const itself = await readKeepingNumbers(
      await diffs.configs({ key: keys.ownerKey }, { from: revisions.first.id, to: revisions.first.id }),
    );
    expect(itself).toEqual({
      from: configSide("first"),
      to: configSide("first"),
      identical: true,
      coarse: false,
      patch: [],
      changes: [],
    });
  });

  it("answers any role of the organization the same, read-only keys and bare keys too", async () => {
    const query = { from: revisions.first.id, to: revisions.second.id };
    const expected = await (await diffs.configs({ key: keys.ownerKey }, query)).text();
    for (const as of [{ key: keys.viewerKey }, { key: keys.readOnlyKey }, bareKey(keys.viewerKey)] satisfies Credentials[]) {
      const response = await diffs.configs(as, query);
      expect(response.status).toBe(200);
      expect(await response.text()).toBe(expected);
    }
  });
});

describe("GET /diff/environments", () => {
  const stagingSide = (index: number, which: keyof typeof revisions) => ({
    id: staging[index],
    config_name: "main",
    revision: n(String(revisions[which].revision)),
    environment: "staging",
    environment_revision: n(String(index + 1)),
  });
  const nothingSide = () => ({
    id: nothingDeployed,
    config_name: null,
    revision: null,
    environment: "development",
    environment_revision: n("1"),
  });

  it("answers the patch of what one environment revision deployed to what another did", async () => {
    const query = { from: staging[0], to: staging[1] };
    expect(await readKeepingNumbers(await diffs.environments({ key: keys.readOnlyKey }, query))).toEqual({
      from: stagingSide(0, "first"),
      to: stagingSide(1, "second"),
      ...FIRST_TO_SECOND,
    });
  });

  it("answers one replace of the whole document from or to a revision that deployed nothing", async () => {
    const document = {
      config_name: "main",
      params: {
        temperature: n("0.7"),
        model: "a",
        big: n("9007199254740993"),
        one: n("1.0"),
        list: [n("1"), n("2"), n("3")],
        "a/b~c": { x: null },
      },
      url: "",
    };
    const forward = await readKeepingNumbers(
      await diffs.environments({ key: keys.viewerKey }, { from: nothingDeployed, to: staging[0] }),
    );
    expect(forward).toEqual({
      from: nothingSide(),
      to: stagingSide(0, "first"),
      identical: false,
      coarse: false,
      patch: [{ op: "replace", path: "", value: document }],
      changes: [{ path: "", op: "replace", from: null, to: document }],
    });
    const back = await readKeepingNumbers(
      await diffs.environments({ key: keys.viewerKey }, { from: staging[0], to: nothingDeployed }),
    );
    expect(back).toEqual({
      from: stagingSide(0, "first"),
      to: nothingSide(),
      identical: false,
      coarse: false,
      patch: [{ op: "replace", path: "", value: null }],
      changes: [{ path: "", op: "replace", from: document, to: null }],
    });
  });
});

describe("what the diffs refuse", () => {
  const NOT_FOUND = "Revision not found";

  it("answers 422 in the validation shape for a missing or malformed id", async () => {
    await expectError(await diffs.configs({ key: keys.ownerKey }, { from: revisions.first.id }), 422, [
      { loc: ["query", "to"], msg: expect.any(String), type: expect.any(String) } as never,
    ]);
    await expectError(await diffs.environments({ key: keys.ownerKey }, { from: "nope", to: staging[0] }), 422, [
      { loc: ["query", "from"], msg: expect.any(String), type: expect.any(String) } as never,
    ]);
  });

  it("answers 401 without a key", async () => {
    await expectError(
      await diffs.configs({}, { from: revisions.first.id, to: revisions.second.id }),
      401,
      expect.any(String) as never,
    );
  });

  it("answers 404 for an unknown id on either side, and for an id of the other kind", async () => {
    const unknown = crypto.randomUUID();
    for (const query of [
      { from: unknown, to: revisions.second.id },
      { from: revisions.first.id, to: unknown },
      { from: revisions.first.id, to: staging[1] },
    ]) {
      await expectError(await diffs.configs({ key: keys.ownerKey }, query), 404, NOT_FOUND);
    }
    await expectError(
      await diffs.environments({ key: keys.ownerKey }, { from: staging[1], to: revisions.second.id }),
      404,
      NOT_FOUND,
    );
  });

  it("answers 404 to a member of another organization, whose own revisions are found", async () => {
    const query = { from: revisions.first.id, to: revisions.second.id };
    await expectError(await diffs.configs({ key: keys.outsider.key }, query), 404, NOT_FOUND);
    await expectError(await diffs.environments({ key: keys.outsider.key }, { from: staging[0], to: staging[1] }), 404, NOT_FOUND);
  });

  it("answers 404 for two revisions of two organizations the caller belongs to, on one shard or two", async () => {
    for (const shard of ["SHARD_0", "SHARD_1"] as const) {
      const other = await createTeam(owner, [], shard);
      const otherKey = await issueKey(owner.userId, other.projectId);
      const otherApp = await createAppVia(otherKey, { app_name: `elsewhere-${shard}` });
      const theirs = (await deploy(otherApp, "staging", "main", owner)).revisionId;
      expect(await diffs.environments({ key: otherKey }, { from: theirs, to: theirs }).then((r) => r.status)).toBe(200);
      for (const key of [otherKey, keys.ownerKey]) {
        await expectError(await diffs.environments({ key }, { from: theirs, to: staging[0] }), 404, NOT_FOUND);
        await expectError(await diffs.environments({ key }, { from: staging[0], to: theirs }), 404, NOT_FOUND);
      }
    }
  });
});
