import { beforeAll, describe, expect, it } from "vitest";
import {
  type Account,
  type ConfigOutput,
  createAccount,
  createAppVia,
  createTeam,
  deploy,
  expectError,
  expectJson,
  FORBIDDEN,
  issueKey,
  send,
} from "../fixtures";
import { databaseProblems, snapshot } from "../harness";
import { countOnShards } from "../pool";

/*
 * The config registry as the platform's client calls it: POST /variants/configs/{add,commit,fetch,fork}, with
 * refs {slug, version, id} (unset keys omitted, or null), the bare key in Authorization.
 */

let owner: Account;
let editor: Account;
let viewer: Account;
let outsider: Account;
let appId: string;
const APP_NAME = "registry";

/** As the platform's client sends it: the bare key, JSON. */
const call = (action: string, key: string, body: unknown) =>
  send("POST", `/variants/configs/${action}`, { authorization: key, body });

const expectConfig = (response: Response) => expectJson<ConfigOutput>(response);

/** What a revision holds, whole: params are compared as a whole, so params merged into the latest's do not pass. */
const revisionOf = (config: ConfigOutput) => ({ params: config.params, url: config.url, version: config.variant_ref.version });

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

beforeAll(async () => {
  [owner, editor, viewer, outsider] = [
    await createAccount(),
    await createAccount(),
    await createAccount(),
    await createAccount(),
  ];
  const team = await createTeam(owner, [
    [editor, "editor"],
    [viewer, "viewer"],
  ]);
  appId = await createAppVia(owner.key, { app_name: APP_NAME, organization_id: team.organizationId });
  // An app's slug is looked up in the key's project: these keys name the team's.
  editor.key = await issueKey(editor.userId, team.projectId);
  viewer.key = await issueKey(viewer.userId, team.projectId);
});

describe("configs/add", () => {
  it('adds a config at revision 1 with params {} and url "", answered as a Config', async () => {
    const config = await expectConfig(
      await call("add", editor.key, { variant_ref: { slug: "main" }, application_ref: { id: appId } }),
    );
    const createdAt = config.variant_lifecycle.created_at;
    expect(createdAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(config).toEqual({
      params: {},
      url: "",
      application_ref: { slug: APP_NAME, version: null, id: appId },
      service_ref: null,
      variant_ref: { slug: "main", version: 1, id: expect.stringMatching(UUID) },
      environment_ref: null,
      variant_lifecycle: {
        created_at: createdAt,
        updated_at: createdAt,
        updated_by: `${editor.username}@example.com`,
        updated_by_id: editor.userId,
      },
      environment_lifecycle: null,
    });
  });

  it("answers 400 Config already exists. for a name the app has, and writes nothing", async () => {
    const before = await snapshot();
    await expectError(
      await call("add", editor.key, { variant_ref: { slug: "main" }, application_ref: { id: appId } }),
      400,
      "Config already exists.",
    );
    expect(await snapshot()).toEqual(before);
  });

  it("refuses a viewer (403) and hides the app from an outsider (404), writing nothing", async () => {
    const before = await snapshot();
    const add = { variant_ref: { slug: "viewer-made" }, application_ref: { id: appId } };
    await expectError(await call("add", viewer.key, add), 403, FORBIDDEN);
    await expectError(await call("add", outsider.key, add), 404, "Config not found.");
    expect(await snapshot()).toEqual(before);
  });

  it("needs the app named and a config name (422)", async () => {
    const missing = await call("add", editor.key, { variant_ref: { slug: "x" } });
    expect(missing.status).toBe(422);
    const unnamed = await call("add", editor.key, { variant_ref: {}, application_ref: { id: appId } });
    expect(unnamed.status).toBe(422);
    expect(((await unnamed.json()) as { detail: { loc: unknown[] }[] }).detail[0].loc).toEqual(["body", "variant_ref", "slug"]);
  });
});

describe("configs/commit", () => {
  it("makes the next revision; params replace the latest's (no merge), {} included; url is kept unless given", async () => {
    const ref = { application_ref: { id: appId }, variant_ref: { slug: "commits" } };
    await expectConfig(await call("add", editor.key, ref));
    const second = await expectConfig(
      await call("commit", editor.key, { ...ref, params: { model: "a", temperature: 0.1 }, url: "https://svc.example" }),
    );
    expect(revisionOf(second)).toEqual({ params: { model: "a", temperature: 0.1 }, url: "https://svc.example", version: 2 });
    const third = await expectConfig(await call("commit", editor.key, { ...ref, params: { model: "b" } }));
    expect(revisionOf(third)).toEqual({ params: { model: "b" }, url: "https://svc.example", version: 3 });
    const emptied = await expectConfig(await call("commit", editor.key, { ...ref, params: {}, url: "" }));
    expect(revisionOf(emptied)).toEqual({ params: {}, url: "", version: 4 });
    expect(new Set([second, third, emptied].map((config) => config.variant_ref.id)).size).toBe(3);
  });

  it("accepts the body wrapped as {config: ...}, with refs carrying nulls and unknown keys, as later clients send it", async () => {
    await expectConfig(await call("add", editor.key, { application_ref: byNameOf(), variant_ref: { slug: "wrapped" } }));
    const config = await expectConfig(
      await call("commit", editor.key, {
        config: {
          params: { prompt: "hi" },
          variant_ref: { slug: "wrapped", version: null, id: null, commit_message: "first" },
          application_ref: { slug: null, version: null, id: appId },
        },
      }),
    );
    expect(config.params).toEqual({ prompt: "hi" });
    expect(config.variant_ref).toEqual({ slug: "wrapped", version: 2, id: expect.stringMatching(UUID) });
  });

  it("answers 409 when variant_ref.version (or the revision its id names) is not the latest, and writes nothing", async () => {
    const ref = { application_ref: { id: appId }, variant_ref: { slug: "optimistic" } };
    const first = await expectConfig(await call("add", editor.key, ref));
    const seen = await expectConfig(
      await call("commit", editor.key, { ...ref, variant_ref: { slug: "optimistic", version: 1 }, params: { a: 1 } }),
    );
    expect(seen.variant_ref.version).toBe(2);
    const before = await snapshot();
    const stale = await call("commit", editor.key, { ...ref, variant_ref: { slug: "optimistic", version: 1 }, params: { a: 2 } });
    expect(stale.status).toBe(409);
    expect(((await stale.json()) as { detail: string }).detail).toMatch(/latest version is 2/);
    const staleById = await call("commit", editor.key, { variant_ref: { id: first.variant_ref.id }, params: { a: 3 } });
    expect(staleById.status).toBe(409);
    expect(await snapshot()).toEqual(before);
    // On top of what is the latest, by version or by its revision id.
    const onTop = await expectConfig(
      await call("commit", editor.key, { variant_ref: { id: seen.variant_ref.id }, params: { a: 4 } }),
    );
    expect(onTop.variant_ref.version).toBe(3);
  });

  it("refuses a viewer (403), an outsider (404), an unknown config (404) and params that are not an object (422)", async () => {
    const ref = { application_ref: { id: appId }, variant_ref: { slug: "main" } };
    const before = await snapshot();
    await expectError(await call("commit", viewer.key, { ...ref, params: {} }), 403, FORBIDDEN);
    await expectError(await call("commit", outsider.key, { ...ref, params: {} }), 404, "Config not found.");
    await expectError(
      await call("commit", editor.key, { ...ref, variant_ref: { slug: "nope" }, params: {} }),
      404,
      "Config not found.",
    );
    for (const params of [[], "x", null, 1]) {
      const response = await call("commit", editor.key, { ...ref, params });
      expect(response.status).toBe(422);
      expect(((await response.json()) as { detail: { loc: unknown[]; type: string }[] }).detail[0]).toMatchObject({
        loc: ["body", "params"],
      });
    }
    expect(await snapshot()).toEqual(before);
  });

  it("takes params up to 256 KiB, and answers 413 beyond", async () => {
    const ref = { application_ref: { id: appId }, variant_ref: { slug: "main" } };
    const large = await call("commit", editor.key, { ...ref, params: { text: "x".repeat(200 * 1024) } });
    expect(large.status).toBe(200);
    const tooLarge = await call("commit", editor.key, { ...ref, params: { text: "x".repeat(257 * 1024) } });
    expect(tooLarge.status).toBe(413);
  });
});

/** The application ref by name, as the SDK sends it when it knows the app's slug. */
const byNameOf = () => ({ slug: APP_NAME, version: null, id: null });

describe("configs/fetch", () => {
  const fetched = "fetched";
  beforeAll(async () => {
    const ref = { application_ref: { id: appId }, variant_ref: { slug: fetched } };
    await expectConfig(await call("add", editor.key, ref));
    await expectConfig(await call("commit", editor.key, { ...ref, params: { v: 2 } }));
    await expectConfig(await call("commit", editor.key, { ...ref, params: { v: 3 } }));
  });

  it("by variant ref: the latest, a version, or a revision id", async () => {
    const latest = await expectConfig(
      await call("fetch", viewer.key, { variant_ref: { slug: fetched }, application_ref: { id: appId } }),
    );
    expect(latest.params).toEqual({ v: 3 });
    expect(latest.variant_ref.version).toBe(3);
    expect(latest.environment_ref).toBeNull();
    const second = await expectConfig(
      await call("fetch", viewer.key, { variant_ref: { slug: fetched, version: 2 }, application_ref: { id: appId } }),
    );
    expect(second.params).toEqual({ v: 2 });
    const byId = await expectConfig(await call("fetch", viewer.key, { variant_ref: { id: second.variant_ref.id } }));
    expect(byId).toEqual(second);
    const zero = await call("fetch", viewer.key, { variant_ref: { slug: fetched, version: 0 }, application_ref: { id: appId } });
    await expectError(zero, 404, "Config not found.");
  });

  it("by environment ref: an answer whose size does not grow with the environment's history", async () => {
    const fetchDevelopment = () =>
      call("fetch", viewer.key, { environment_ref: { slug: "development" }, application_ref: { id: appId } });
    await deploy(appId, "development", fetched, owner);
    const once = await fetchDevelopment();
    const onceText = await once.text();
    for (let i = 0; i < 20; i++) await deploy(appId, "development", fetched, owner);
    const later = await expectConfig(await fetchDevelopment());
    expect(later.environment_ref?.version).toBe(21);
    // The same config through another revision: only the version's one more digit.
    expect(JSON.stringify(later).length).toBe(onceText.length + 1);
  });

  it("by environment ref: what is deployed now, at an environment version, or by environment revision id", async () => {
    const first = await deploy(appId, "staging", fetched, owner);
    await expectConfig(
      await call("commit", editor.key, { application_ref: { id: appId }, variant_ref: { slug: fetched }, params: { v: 4 } }),
    );
    const second = await deploy(appId, "staging", fetched, owner);
    const now = await expectConfig(
      await call("fetch", viewer.key, { environment_ref: { slug: "staging" }, application_ref: byNameOf() }),
    );
    expect(now.params).toEqual({ v: 4 });
    expect(now.environment_ref).toEqual({ slug: "staging", version: second.revision, id: second.revisionId });
    const deployedAt = now.environment_lifecycle?.created_at;
    expect(now.environment_lifecycle).toEqual({
      created_at: deployedAt,
      updated_at: deployedAt,
      updated_by_id: owner.userId,
      updated_by: `${owner.username}@example.com`,
    });
    const then = await expectConfig(
      await call("fetch", viewer.key, {
        environment_ref: { slug: "staging", version: first.revision },
        application_ref: { id: appId },
      }),
    );
    expect(then.params).toEqual({ v: 3 });
    expect(then.environment_ref).toEqual({ slug: "staging", version: first.revision, id: first.revisionId });
    const byId = await expectConfig(await call("fetch", viewer.key, { environment_ref: { id: first.revisionId } }));
    expect(byId).toEqual(then);
  });

  it("with the app alone: its production environment; 404 Config not found. while nothing is deployed there", async () => {
    await expectError(await call("fetch", viewer.key, { application_ref: { id: appId } }), 404, "Config not found.");
    await deploy(appId, "production", fetched, owner);
    const production = await expectConfig(await call("fetch", viewer.key, { application_ref: { id: appId } }));
    expect(production.environment_ref?.slug).toBe("production");
  });

  it("a variant ref wins over an environment ref", async () => {
    const config = await expectConfig(
      await call("fetch", viewer.key, {
        variant_ref: { slug: fetched, version: 1 },
        environment_ref: { slug: "staging" },
        application_ref: { id: appId },
      }),
    );
    expect(config.params).toEqual({});
    expect(config.variant_ref.version).toBe(1);
    expect(config.environment_ref).toBeNull();
  });

  it("refs that disagree, another organization's app, unknown names: 404 Config not found.", async () => {
    const wrong = [
      { variant_ref: { slug: fetched }, application_ref: { id: appId, slug: "another-name" } },
      { variant_ref: { slug: "absent" }, application_ref: { id: appId } },
      { environment_ref: { slug: "qa" }, application_ref: { id: appId } },
      { variant_ref: { slug: fetched }, application_ref: { slug: "absent-app" } },
    ];
    for (const body of wrong) await expectError(await call("fetch", viewer.key, body), 404, "Config not found.");
    await expectError(
      await call("fetch", outsider.key, { variant_ref: { slug: fetched }, application_ref: { id: appId } }),
      404,
      "Config not found.",
    );
    const revisionOfOtherApp = await expectConfig(
      await call("add", outsider.key, {
        variant_ref: { slug: "theirs" },
        application_ref: { id: await createAppVia(outsider.key, { app_name: "theirs" }) },
      }),
    );
    await expectError(
      await call("fetch", viewer.key, { variant_ref: { id: revisionOfOtherApp.variant_ref.id } }),
      404,
      "Config not found.",
    );
  });

  it("needs a way to name the app (422, saying what would do), and treats an all-null ref as absent", async () => {
    const unnamed = {
      detail: [
        {
          loc: ["body", "application_ref"],
          msg: "Value error, application_ref is required unless variant_ref or environment_ref has an id",
          type: "value_error",
        },
      ],
    };
    for (const body of [{}, { variant_ref: { slug: fetched } }, { environment_ref: { slug: "staging" } }]) {
      expect(await expectJson(await call("fetch", viewer.key, body), 422), JSON.stringify(body)).toEqual(unnamed);
    }
    expect((await call("fetch", viewer.key, { variant_ref: { version: 1 } })).status).toBe(422);
    const allNull = await expectConfig(
      await call("fetch", viewer.key, {
        variant_ref: { slug: null, version: null, id: null },
        environment_ref: null,
        application_ref: { id: appId },
      }),
    );
    expect(allNull.environment_ref?.slug).toBe("production");
  });
});

describe("an environment revision's id names the app", () => {
  it("for fetch and fork of a config by slug, with no application_ref; commit does not read environment_ref (422)", async () => {
    const ref = { application_ref: { id: appId }, variant_ref: { slug: "by-environment-id" } };
    await expectConfig(await call("add", editor.key, ref));
    const committed = await expectConfig(await call("commit", editor.key, { ...ref, params: { n: 1 } }));
    const deployed = await deploy(appId, "development", "main", owner);
    const refs = { variant_ref: { slug: "by-environment-id" }, environment_ref: { id: deployed.revisionId } };
    const fetchedConfig = await expectConfig(await call("fetch", viewer.key, refs));
    expect({ variant_ref: fetchedConfig.variant_ref, params: fetchedConfig.params }).toEqual({
      variant_ref: committed.variant_ref,
      params: { n: 1 },
    });
    const forked = await expectConfig(await call("fork", editor.key, refs));
    expect(forked.variant_ref.slug).toMatch(/^by-environment-id_[0-9a-f]{8}$/);
    const before = await snapshot();
    expect(await expectJson(await call("commit", editor.key, { ...refs, params: {} }), 422)).toEqual({
      detail: [
        {
          loc: ["body", "application_ref"],
          msg: "Value error, application_ref is required unless variant_ref has an id (environment_ref is not read here)",
          type: "value_error",
        },
      ],
    });
    expect(await snapshot()).toEqual(before);
  });
});

describe("configs/commit url", () => {
  const commitWith = (url: string) => ({ application_ref: { id: appId }, variant_ref: { slug: "main" }, params: {}, url });
  const urlRefused = {
    detail: [
      {
        loc: ["body", "url"],
        msg: 'Value error, url must be "" or an absolute http:// or https:// URL without spaces or control characters',
        type: "value_error",
      },
    ],
  };

  it('is "" or an absolute http(s) URL, stored as sent', async () => {
    for (const url of [
      "https://svc.example/v1?a=b#c",
      "HTTP://SVC.EXAMPLE",
      "http://127.0.0.1:8080/x",
      "https://例え.jp/パス",
      "",
    ]) {
      const config = await expectConfig(await call("commit", editor.key, commitWith(url)));
      expect(config.url).toBe(url);
    }
  });

  it("refuses javascript:, file:, other schemes, relative urls, spaces and control characters (422), writing nothing", async () => {
    const before = await snapshot();
    for (const url of [
      "javascript:alert(1)",
      "file:///etc/passwd",
      "https://svc.example/\r\nSet-Cookie: a=b",
      "https://svc.example/a\tb",
      "https://svc.example/a b",
      " https://svc.example",
      "https://svc.example/\u0085",
      "ftp://svc.example/x",
      "data:text/html,<script>alert(1)</script>",
      "http:svc.example",
      "//svc.example/x",
      "/relative/path",
      "svc.example",
      "https://",
    ]) {
      expect(await expectJson(await call("commit", editor.key, commitWith(url)), 422), url).toEqual(urlRefused);
    }
    expect(await snapshot()).toEqual(before);
  });
});

describe("configs/fork", () => {
  it("copies the source revision's params and url into a new config <name>_<8 hex> at revision 1", async () => {
    const ref = { application_ref: { id: appId }, variant_ref: { slug: "forked" } };
    await expectConfig(await call("add", editor.key, ref));
    await expectConfig(await call("commit", editor.key, { ...ref, params: { k: 1 }, url: "https://one" }));
    await expectConfig(await call("commit", editor.key, { ...ref, params: { k: 2 } }));
    const fork = await expectConfig(
      await call("fork", editor.key, { variant_ref: { slug: "forked", version: 2 }, application_ref: { id: appId } }),
    );
    expect(fork.variant_ref.slug).toMatch(/^forked_[0-9a-f]{8}$/);
    expect(revisionOf(fork)).toEqual({ params: { k: 1 }, url: "https://one", version: 1 });
    const variants = await send("GET", `/apps/${appId}/variants`, { key: editor.key });
    expect(((await variants.json()) as { config_name: string }[]).map((variant) => variant.config_name)).toContain(
      fork.variant_ref.slug,
    );
  });

  it("forks what an environment runs", async () => {
    const fork = await expectConfig(
      await call("fork", editor.key, { environment_ref: { slug: "staging" }, application_ref: { id: appId } }),
    );
    expect(fork.params).toEqual({ v: 4 });
    expect(fork.environment_ref).toBeNull();
  });

  it("refuses a viewer (403) and an unknown source (404), writing nothing", async () => {
    const before = await snapshot();
    await expectError(
      await call("fork", viewer.key, { variant_ref: { slug: "forked" }, application_ref: { id: appId } }),
      403,
      FORBIDDEN,
    );
    await expectError(
      await call("fork", editor.key, { variant_ref: { slug: "nope" }, application_ref: { id: appId } }),
      404,
      "Config not found.",
    );
    expect(await snapshot()).toEqual(before);
  });
});

it("leaves the database consistent", async () => {
  expect(await databaseProblems()).toEqual([]);
  expect(await countOnShards("SELECT COUNT(*) AS n FROM app_variant_revisions WHERE json_type(params) <> 'object'")).toBe(0);
});
