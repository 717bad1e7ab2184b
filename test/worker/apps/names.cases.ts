import { beforeAll, describe, expect, it } from "vitest";
import { type Account, type ConfigOutput, createAccount, createAppVia, expectJson, postApp, send } from "../fixtures";
import { databaseProblems, snapshot } from "../harness";
import { databaseOf } from "../pool";

/*
 * New names (docs/design.md, "Choices", `app_name`): POST /apps, PATCH /apps/{app_id} and POST /variants/configs/add refuse a
 * name with an invisible, formatting, bidi or filler character, or one that mixes scripts as look-alikes do (422,
 * nothing written); an honest name of any script is taken, stored NFC. Names stored before the rule stay readable
 * and reachable by name: lookups keep the rules they had.
 */

const SCRIPT_HINT = "use one script, or Latin with Han and Hiragana/Katakana, Bopomofo or Hangul";

/** Refused names: what the message says after the field's name. */
const REFUSED: [label: string, name: string, why: string][] = [
  ["a zero-width space at the end", "h-app\u200b", "must not contain U+200B (invisible or formatting character)"],
  ["a word joiner in front", "\u2060h-app", "must not contain U+2060 (invisible or formatting character)"],
  ["a right-to-left override", "h-app\u202e", "must not contain U+202E (bidirectional control)"],
  ["a Hangul filler", "h-app\u3164", "must not contain U+3164 (invisible or formatting character)"],
  ["a Cyrillic а among Latin letters", "\u0430-app", `mixes scripts (Latin and Cyrillic): ${SCRIPT_HINT}`],
  ["a Greek ο among Latin letters", "dem\u03bf", `mixes scripts (Latin and Greek): ${SCRIPT_HINT}`],
  ["Latin, Cyrillic and Greek", "\u0430pp-\u03bf", `mixes scripts (Latin, Cyrillic and Greek): ${SCRIPT_HINT}`],
  ["only a zero-width space", "\u200b", "must not contain U+200B (invisible or formatting character)"],
  ["only a blank braille pattern", "\u2800", "must not contain U+2800 (blank filler)"],
  ["only a combining accent", "\u0301", "must contain a visible character"],
  ["a combining accent first", "\u0301app", "must not start with a combining mark (U+0301)"],
  ["a no-break space", "h\u00a0app", "must not contain U+00A0 (space or separator other than U+0020)"],
  [
    "an ideographic space",
    "\u65e5\u672c\u3000\u30a2\u30d7\u30ea",
    "must not contain U+3000 (space or separator other than U+0020)",
  ],
  ["a soft hyphen", "h\u00adapp", "must not contain U+00AD (invisible or formatting character)"],
  ["a variation selector", "h-app\ufe0f", "must not contain U+FE0F (invisible or formatting character)"],
  ["a private-use character", "h-app\ue000", "must not contain U+E000 (unassigned or private-use character)"],
];

/** Honest names, as sent and as stored (NFC). */
const HONEST: [sent: string, stored: string][] = [
  ["\u043f\u0440\u0438\u043b\u043e\u0436\u0435\u043d\u0438\u0435", "приложение"],
  ["\u65e5\u672c\u8a9e\u30a2\u30d7\u30ea", "日本語アプリ"],
  ["\u03b5\u03c6\u03b1\u03c1\u03bc\u03bf\u03b3\u03ae", "εφαρμογή"],
  ["caf\u00e9-app", "café-app"],
  ["app_2-b", "app_2-b"],
  ["cre\u0300me-bru\u0302le\u0301e", "crème-brûlée"],
  ["\u1112\u1161\u11ab\u1100\u1173\u11af-app", "한글-app"],
  ["\u062a\u0637\u0628\u064a\u0642", "تطبيق"],
  ["app \u65e5\u672c", "app 日本"],
  ["\u{1f680} launch", "🚀 launch"],
];

const refusal = (loc: string[], why: string) => ({
  detail: [{ loc, msg: `Value error, ${loc.at(-1)} ${why}`, type: "value_error" }],
});

let account: Account;
beforeAll(async () => {
  account = await createAccount();
});

describe("POST /apps", () => {
  it.each(REFUSED)("refuses a name with %s (422), and creates nothing", async (_, name, why) => {
    const before = await snapshot();
    expect(await expectJson(await postApp(account.key, { app_name: name }), 422)).toEqual(refusal(["body", "app_name"], why));
    expect(await snapshot()).toEqual(before);
  });

  it.each(HONEST)("creates %s, stored NFC", async (sent, stored) => {
    const created = await expectJson<{ app_id: string; app_name: string }>(await postApp(account.key, { app_name: sent }));
    expect(created.app_name).toBe(stored);
    const row = await databaseOf(created.app_id)
      .prepare("SELECT name FROM apps WHERE id = ?")
      .bind(created.app_id)
      .first<{ name: string }>();
    expect(row?.name).toBe(stored);
  });

  it("checks a name as before first: a blank or control-character name is told only that", async () => {
    expect(await expectJson(await postApp(account.key, { app_name: "\u3000" }), 422)).toEqual({
      detail: [{ loc: ["body", "app_name"], msg: "Value error, app_name must not be blank", type: "value_error" }],
    });
    expect(await expectJson(await postApp(account.key, { app_name: "a\u200b\n" }), 422)).toEqual({
      detail: [
        {
          loc: ["body", "app_name"],
          msg: "Value error, app_name must not contain control characters or line breaks",
          type: "value_error",
        },
      ],
    });
  });
});

describe("PATCH /apps/{app_id}", () => {
  let appId: string;
  beforeAll(async () => {
    appId = await createAppVia(account.key, { app_name: "to-rename" });
  });
  const rename = (app_name: string) => send("PATCH", `/apps/${appId}`, { key: account.key, body: { app_name } });

  it.each(REFUSED)("refuses a name with %s (422), and renames nothing", async (_, name, why) => {
    const before = await snapshot();
    expect(await expectJson(await rename(name), 422)).toEqual(refusal(["body", "app_name"], why));
    expect(await snapshot()).toEqual(before);
  });

  // Not the names POST /apps made: those are taken in this project.
  it.each(HONEST)("renames to %s (with a digit after it), stored NFC", async (sent, stored) => {
    expect(await expectJson(await rename(`${sent} 2`))).toEqual({ app_id: appId, app_name: `${stored} 2` });
    const row = await databaseOf(appId).prepare("SELECT name FROM apps WHERE id = ?").bind(appId).first<{ name: string }>();
    expect(row?.name).toBe(`${stored} 2`);
  });
});

describe("POST /variants/configs/add", () => {
  let appId: string;
  beforeAll(async () => {
    appId = await createAppVia(account.key, { app_name: "with-configs" });
  });
  const add = (slug: string) =>
    send("POST", "/variants/configs/add", {
      key: account.key,
      body: { variant_ref: { slug }, application_ref: { id: appId } },
    });

  it.each(REFUSED)("refuses a config name with %s (422), and adds nothing", async (_, name, why) => {
    const before = await snapshot();
    expect(await expectJson(await add(name), 422)).toEqual(refusal(["body", "variant_ref", "slug"], why));
    expect(await snapshot()).toEqual(before);
  });

  it.each(HONEST)("adds %s, stored NFC", async (sent, stored) => {
    const config = await expectJson<ConfigOutput>(await add(sent));
    expect(config.variant_ref).toMatchObject({ slug: stored, version: 1 });
    const row = await databaseOf(appId)
      .prepare("SELECT name FROM app_variants WHERE app_id = ? AND name = ?")
      .bind(appId, stored)
      .first<{ name: string }>();
    expect(row?.name).toBe(stored);
  });
});

describe("names stored before the rule", () => {
  const [appName, configName] = ["h-app\u200b", "\u0430-config"];
  let owner: Account;
  let appId: string;
  beforeAll(async () => {
    owner = await createAccount();
    appId = await createAppVia(owner.key, { app_name: "legacy" });
    const variantId = crypto.randomUUID();
    const db = databaseOf(appId);
    await db.batch([
      db.prepare("UPDATE apps SET name = ? WHERE id = ?").bind(appName, appId),
      db.prepare("INSERT INTO app_variants (id, app_id, name) VALUES (?, ?, ?)").bind(variantId, appId, configName),
      db
        .prepare("INSERT INTO app_variant_revisions (id, variant_id, revision, modified_by, params) VALUES (?, ?, 1, ?, ?)")
        .bind(crypto.randomUUID(), variantId, owner.userId, '{"legacy":true}'),
    ]);
  });
  const post = (action: string, body: unknown) => send("POST", `/variants/configs/${action}`, { key: owner.key, body });
  const refs = { application_ref: { slug: appName }, variant_ref: { slug: configName } };

  it("are listed by GET /apps, and found by name", async () => {
    const listed = await expectJson<{ app_id: string; app_name: string }[]>(await send("GET", "/apps", { key: owner.key }));
    expect(listed).toEqual([expect.objectContaining({ app_id: appId, app_name: appName })]);
    const found = await send("GET", `/apps?app_name=${encodeURIComponent(appName)}`, { key: owner.key });
    expect(await expectJson(found)).toEqual(listed);
  });

  it("are fetched and deployed by slug", async () => {
    const fetched = await expectJson<ConfigOutput>(await post("fetch", refs));
    expect(fetched).toMatchObject({
      params: { legacy: true },
      application_ref: { slug: appName, id: appId },
      variant_ref: { slug: configName, version: 1 },
    });
    const deployed = await expectJson<ConfigOutput>(await post("deploy", { ...refs, environment_ref: { slug: "staging" } }));
    expect(deployed).toMatchObject({ variant_ref: { slug: configName, version: 1 }, environment_ref: { slug: "staging" } });
    const running = await expectJson<ConfigOutput>(
      await post("fetch", { application_ref: { slug: appName }, environment_ref: { slug: "staging" } }),
    );
    expect(running.variant_ref).toEqual(deployed.variant_ref);
    expect(await databaseProblems()).toEqual([]);
  });

  it("are not made again: the app cannot be renamed to its own name, nor the config added twice under it", async () => {
    const before = await snapshot();
    const renamed = await send("PATCH", `/apps/${appId}`, { key: owner.key, body: { app_name: appName } });
    expect(await expectJson(renamed, 422)).toEqual(
      refusal(["body", "app_name"], "must not contain U+200B (invisible or formatting character)"),
    );
    expect(await expectJson(await post("add", refs), 422)).toEqual(
      refusal(["body", "variant_ref", "slug"], `mixes scripts (Latin and Cyrillic): ${SCRIPT_HINT}`),
    );
    expect(await snapshot()).toEqual(before);
  });
});
