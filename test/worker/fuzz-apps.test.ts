import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { createAppVia, deploy, send } from "./fixtures";
import {
  AppListBody,
  EnvironmentsBody,
  expectOldestFirst,
  type Model,
  plantedWorld,
  RenamedBody,
  type Tracked,
  visibleFirst,
  writerOf,
} from "./fuzz-model";
import { unchanged } from "./fuzz-posts";
import {
  appBodyShapes,
  appEvent,
  asObject,
  bodySpec,
  certainParameters,
  chooseId,
  contentType,
  expectDetail,
  FORBIDDEN,
  fuzz,
  fuzzRead,
  type Holder,
  headersOf,
  type IdChoice,
  idChoice,
  idStrings,
  likelyValidName,
  MAX_BODY_BYTES,
  nameIsValid,
  newNameIsValid,
  own,
  queryPart,
  type Replay,
  RUNS,
  readJsonBody,
  requestInput,
  routedAnswer,
  runsShare,
  type SegmentChoice,
  segmentChoice,
  segmentOf,
  TIMEOUT,
  TIMESTAMP,
  uuidValidity,
  Verdict,
  type World,
  worldIds,
} from "./fuzz-support";
import { databaseProblems, expectEvents } from "./harness";

/*
 * Generated requests to GET /apps, GET /apps/{app_id}/environments, PATCH and DELETE /apps/{app_id}, and new names
 * (honest ones of several scripts, invisible characters, look-alikes) to POST /apps, PATCH /apps/{app_id} and POST
 * /variants/configs/add, against the real local D1 (seeds, REPLAY and the runner: fuzz-support.ts). The oracle (fuzz-model.ts) predicts each answer from the
 * request, the caller's role and every row of the database; after each write, the rows that changed must be exactly
 * those the oracle says.
 */
const REPLAY: Replay = {};

let world: World;
let db: Tracked;
/** Apps deleted by the fuzzing: their ids must answer 404 from then on. */
const deleted: string[] = [];

beforeAll(async () => {
  ({ world, db } = await plantedWorld());
});

afterAll(() => {
  vi.restoreAllMocks();
});

/**
 * The app's path segment: an app of the database as it is now, one the caller can see twice as often as another (or
 * one deleted, random, ...), written one way or another.
 */
const appPath = (model: Model, { choice, pick }: { choice: SegmentChoice; pick: IdChoice }, holder: Holder | undefined) =>
  segmentOf(choice, chooseId(pick, visibleFirst(model, holder, [...model.apps.keys()]), deleted));

const appSegment = fc.record({ choice: segmentChoice, pick: idChoice });

describe("fuzzing GET /apps", () => {
  it(
    `answers ${RUNS} generated requests as documented: the apps of the project asked for, to its members only`,
    async () => {
      const names = fc.oneof(
        { arbitrary: fc.constantFrom(...[...db.model.apps.values()].map((app) => app.name)), weight: 3 },
        { arbitrary: fc.constantFrom("cafe\u0301", "CAF\u00c9", "%", "_", "fuzz%", "fuzz-own "), weight: 1 },
        { arbitrary: likelyValidName, weight: 2 },
      );
      await fuzzRead(world, REPLAY, "/apps", {
        parts: { name: queryPart("app_name", names), workspace: queryPart("workspace_id", idStrings(worldIds(world))) },
        query: ({ name, workspace }) => [name, workspace],
        ok: AppListBody,
        judge: (verdict, _, { app_name, workspace_id }) => {
          if (app_name !== undefined) verdict.field(["query", "app_name"], nameIsValid(app_name));
          if (workspace_id !== undefined) verdict.field(["query", "workspace_id"], uuidValidity(workspace_id));
        },
        predict: (holder, _, { app_name, workspace_id }, answer) => {
          // The key's project, or the workspace's default project; nothing of a project the caller cannot see.
          const model = db.model;
          const projectId = workspace_id === undefined ? holder.keyProjectId : model.defaultProject(workspace_id.toLowerCase());
          const organization = projectId && model.organizationOfProject(projectId);
          const listed =
            projectId && organization && holder.roles.has(organization)
              ? model.appsOfProject(projectId).filter((app) => app_name === undefined || app.name === app_name.normalize("NFC"))
              : [];
          expect(answer.status).toBe(200);
          const body = answer.body as { app_id: string }[];
          expectOldestFirst(
            body.map((app) => app.app_id),
            listed,
          );
          expect(body).toEqual(body.map((app) => model.appListItem(model.apps.get(app.app_id)!)));
        },
        mustSee: [200, 401, 422],
      });
      unchanged(await db.changes());
    },
    TIMEOUT,
  );
});

describe("fuzzing GET /apps/{app_id}/environments", () => {
  it(
    `answers ${RUNS} generated requests as documented: an app's three environments, to members only`,
    async () => {
      await fuzzRead(world, REPLAY, "/apps/:app_id/environments", {
        parts: { app: appSegment },
        segments: ({ app }, holder) => [appPath(db.model, app, holder)],
        ok: EnvironmentsBody,
        predict: (holder, [appId], _, answer) => {
          const model = db.model;
          const visible = model.visibleApp(holder, appId.toLowerCase());
          if (!visible) expectDetail(answer.status, answer.body, 404, "App not found");
          else
            expect(answer).toEqual({
              status: 200,
              body: model.environmentsOf(visible.id).map((row) => model.environmentItem(row)),
            });
        },
      });
      unchanged(await db.changes());
    },
    TIMEOUT,
  );
});

describe("fuzzing PATCH /apps/{app_id}", () => {
  it(
    `answers ${RUNS} generated requests as documented, and renames exactly the app a 200 names`,
    async () => {
      const route = "/apps/:app_id";
      const input = requestInput(world, {
        type: contentType,
        spec: bodySpec(
          appBodyShapes(
            [...worldIds(world), ...db.model.apps.keys()],
            [...db.model.apps.values()].map((app) => app.name),
          ),
        ),
        app: appSegment,
        // Now and then the name of another app of the target's project (a 409 for a writer), chosen when sent.
        sibling: fc.oneof({ arbitrary: fc.constant(null), weight: 6 }, { arbitrary: fc.nat(), weight: 1 }),
      });
      await fuzz(
        `PATCH ${route}`,
        REPLAY,
        input,
        async ({ auth, type: [type, isJsonType], spec: generated, app, sibling, slash, extra }) => {
          const model = db.model;
          const segment = appPath(model, app, auth.holder);
          const target = model.apps.get(segment.decoded?.toLowerCase() ?? "");
          const siblings = target ? model.appsOfProject(target.project_id).filter((other) => other.id !== target.id) : [];
          const spec =
            sibling !== null && siblings.length > 0
              ? { kind: "sibling", body: JSON.stringify({ app_name: siblings[sibling % siblings.length].name }) }
              : generated;
          const path = `/apps/${segment.raw}${slash ? "/" : ""}`;
          const response = await send("PATCH", path, { rawBody: spec.body, headers: headersOf(auth, extra, type) });
          const changed = await db.changes();
          const answer = await routedAnswer(response, { path, route, auth }, RenamedBody);
          const [appId] = certainParameters(segment) ?? [];
          if (!answer || appId === undefined) {
            if (response.status !== 200) unchanged(changed);
            return response.status;
          }
          const { verdict, parsed } = readJsonBody(spec.body, isJsonType, MAX_BODY_BYTES);
          verdict.field(["path", "app_id"], uuidValidity(appId));
          const fields = asObject(parsed?.value);
          if (parsed && !fields) verdict.fail(422, ["body"]);
          if (fields) verdict.field(["body", "app_name"], newNameIsValid(own(fields, "app_name")));
          if (!verdict.accepted(response.status, answer.body)) {
            unchanged(changed);
            return response.status;
          }

          // Not visible: 404; a viewer: 403; a name another app of the project has: 409; else renamed.
          const id = appId.toLowerCase();
          const role = model.role(answer.holder, id);
          const name = (own(fields, "app_name") as string).normalize("NFC");
          const renamed = model.apps.get(id);
          if (!role || !renamed) expectDetail(response.status, answer.body, 404, "App not found");
          else if (role === "viewer") expectDetail(response.status, answer.body, 403, FORBIDDEN);
          else if (model.appsOfProject(renamed.project_id).some((other) => other.id !== id && other.name === name))
            expectDetail(response.status, answer.body, 409, "App with the same name already exists");
          else {
            expect({ status: response.status, body: answer.body }).toEqual({
              status: 200,
              body: { app_id: id, app_name: name },
            });
            // The same name again records nothing, and within the millisecond leaves the row as it was.
            const previous = { previous_app_name: renamed.name };
            const rest = expectEvents(
              changed,
              ...(name === renamed.name ? [] : [appEvent(model, answer.holder, "app.renamed", { ...renamed, name }, previous)]),
            );
            if (name !== renamed.name || Object.keys(rest).length > 0) {
              const after = { ...renamed, name, updated_at: expect.stringMatching(TIMESTAMP) };
              expect(rest).toEqual({ apps: { added: [after], removed: [renamed] } });
            }
            return response.status;
          }
          unchanged(changed);
          return response.status;
        },
        [200, 401, 403, 404, 409, 413, 415, 422],
      );
      expect(await databaseProblems()).toEqual([]);
    },
    TIMEOUT,
  );
});

describe("fuzzing DELETE /apps/{app_id}", () => {
  it(
    `answers ${RUNS} generated requests as documented, and removes exactly the app a 200 names, with all it holds`,
    async () => {
      const route = "/apps/:app_id";
      const input = requestInput(world, { app: appSegment });
      await fuzz(
        `DELETE ${route}`,
        REPLAY,
        input,
        async ({ auth, app, slash, extra }) => {
          const model = db.model;
          const segment = appPath(model, app, auth.holder);
          const path = `/apps/${segment.raw}${slash ? "/" : ""}`;
          const response = await send("DELETE", path, { headers: headersOf(auth, extra) });
          const changed = await db.changes();
          const answer = await routedAnswer(response, { path, route, auth }, z.null());
          const [appId] = certainParameters(segment) ?? [];
          if (!answer || appId === undefined) {
            if (response.status !== 200) unchanged(changed);
            return response.status;
          }
          const verdict = new Verdict();
          verdict.field(["path", "app_id"], uuidValidity(appId));
          if (!verdict.accepted(response.status, answer.body)) {
            unchanged(changed);
            return response.status;
          }
          const id = appId.toLowerCase();
          const role = model.role(answer.holder, id);
          const gone = model.apps.get(id);
          if (!role || !gone) expectDetail(response.status, answer.body, 404, "App not found");
          else if (role === "viewer") expectDetail(response.status, answer.body, 403, FORBIDDEN);
          else {
            expect({ status: response.status, body: answer.body }).toEqual({ status: 200, body: null });
            // The app and every row under it, in one go; nothing else.
            const removed = Object.entries(model.subtree(id)).filter(([, rows]) => rows.length > 0);
            expect(expectEvents(changed, appEvent(model, answer.holder, "app.deleted", gone))).toEqual(
              Object.fromEntries(removed.map(([table, rows]) => [table, { added: [], removed: rows }])),
            );
            // Another app in its place (with a config deployed, for the next delete to take along), so that deletes
            // keep finding apps.
            deleted.push(id);
            const by = writerOf(world, gone.project_id);
            const replanted = await createAppVia(by.key, {
              app_name: `replanted ${deleted.length}`,
              project_id: gone.project_id,
            });
            await deploy(replanted, "production", "main", by);
            await db.changes();
            return response.status;
          }
          unchanged(changed);
          return response.status;
        },
        [200, 401, 403, 404, 422],
      );
      expect(await databaseProblems()).toEqual([]);
    },
    TIMEOUT,
  );
});

/** Letters of a few scripts (each only of its script), and what honest names put between words. */
const ALPHABETS = {
  latin: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZéèêëàâäçîïôöûüùñßøåæœ",
  cyrillic: "абвгдеёжзийклмнопрстуфхцчшщъыьэюяАБВГДЕЁЖЗИЙКЛМНОПРСТУФХЦЧШЩЪЫЬЭЮЯіїє",
  greek: "αβγδεζηθικλμνξοπρστυφχψωάέήίόύώςΑΒΓΔΕΖΗΘΙΚΛΜΝΞΟΠΡΣΤΥΦΧΨΩ",
  japanese: "日本語設定漢字東京アプリケーションひらがなカタカナー",
  hangul: "가나다라마바사아자차카타파하앱설정한국어",
  arabic: "ابتثجحخدذرزسشصضطظعغفقكلمنهوي",
};
const BETWEEN = "0123456789-_";
/** Invisible, formatting, bidi and filler characters, and spaces other than U+0020 (docs/design.md, "Choices", `app_name`). */
const INVISIBLE = [
  ..."\u200b\u200c\u200d\u2060\ufeff\u00ad\u034f\u180e\u3164\u115f\u1160\uffa0\ufe0f\u202a\u202b\u202c\u202d\u202e",
  ..."\u200e\u200f\u061c\u2066\u2067\u2068\u2069\u2800\u00a0\u2007\u202f\u3000\u2028\u2029",
  "\u{e0100}",
  "\u{1d173}",
];
/** Latin letters and their Cyrillic and Greek look-alikes. */
const LOOK_ALIKES: [latin: string, lookAlike: string, script: string][] = [
  ..."aceopxyisjABEKMHOPCTX"
    .split("")
    .map((latin, i): [string, string, string] => [latin, "асеорхуіѕјАВЕКМНОРСТХ"[i], "Cyrillic"]),
  ..."ovuiABEZHIKMNOPTYX".split("").map((latin, i): [string, string, string] => [latin, "ονυιΑΒΕΖΗΙΚΜΝΟΡΤΥΧ"[i], "Greek"]),
];

const word = (alphabet: string) => fc.string({ unit: fc.constantFrom(...alphabet), minLength: 1, maxLength: 8 });
/** Words of `alphabets` (each word of one of them), with digits, hyphens or underscores between and after them. */
const honestName = (...alphabets: string[]) =>
  fc
    .array(fc.tuple(fc.oneof(...alphabets.map(word)), fc.string({ unit: fc.constantFrom(...BETWEEN), maxLength: 2 })), {
      minLength: 1,
      maxLength: 3,
    })
    .map((parts) => parts.map(([letters, between]) => letters + between).join(""));

/** A name, what the service must answer to it (`why`: the refusal's message after the field's name begins so). */
interface NameCase {
  label: string;
  name: string;
  why?: string;
}

const HONEST: [label: string, name: fc.Arbitrary<string>][] = [
  ["Latin with accents", honestName(ALPHABETS.latin)],
  ["Cyrillic", honestName(ALPHABETS.cyrillic)],
  ["Greek", honestName(ALPHABETS.greek)],
  ["Han and Kana", honestName(ALPHABETS.japanese)],
  ["Latin with Han and Kana", honestName(ALPHABETS.latin, ALPHABETS.japanese)],
  ["Hangul", honestName(ALPHABETS.hangul)],
  ["Latin with Hangul", honestName(ALPHABETS.latin, ALPHABETS.hangul)],
  ["Arabic", honestName(ALPHABETS.arabic)],
  ["digits, hyphens and underscores", honestName("abc", BETWEEN)],
];
/** An honest name, sent decomposed (NFD) one time in four: the service stores it NFC. */
const honest = fc.oneof(
  ...HONEST.map(([label, name]) =>
    fc.tuple(name, fc.nat(3)).map(([text, n]): NameCase => ({ label, name: n === 0 ? text.normalize("NFD") : text })),
  ),
);
const withInvisible = fc
  .tuple(fc.oneof(...HONEST.map(([, name]) => name)), fc.constantFrom(...INVISIBLE), fc.nat())
  .map(([text, invisible, at]): NameCase => {
    const chars = [...text];
    chars.splice(at % (chars.length + 1), 0, invisible);
    const code = invisible.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0");
    return {
      label: "an invisible, bidi or filler character inserted",
      name: chars.join(""),
      // U+2028 and U+2029 break lines: refused as \n is, before the invisible characters are looked at.
      why: /[\u2028\u2029]/.test(invisible)
        ? "must not contain control characters or line breaks"
        : `must not contain U+${code} (`,
    };
  });
// One letter of a Latin name swapped for a look-alike, another Latin letter kept before or after it.
const withLookAlike = fc
  .tuple(word(ALPHABETS.latin), fc.constantFrom(...LOOK_ALIKES), honestName(ALPHABETS.latin), fc.boolean())
  .map(
    ([kept, [, lookAlike, script], rest, before]): NameCase => ({
      label: `a ${script} look-alike among Latin letters`,
      name: before ? `${kept}${lookAlike}${rest}` : `${lookAlike}${kept}${rest}`,
      why: `mixes scripts (Latin and ${script}): use one script, or Latin with Han and Hiragana/Katakana, Bopomofo or Hangul`,
    }),
  );

describe("fuzzing new names: POST /apps, PATCH /apps/{app_id}, POST /variants/configs/add", () => {
  const runs = runsShare(1 / 2);
  it(
    `takes ${runs} generated honest names of any script (stored NFC), and refuses invisible characters and look-alikes (422 at the name, nothing written)`,
    async () => {
      const { owner } = world;
      const appId = await createAppVia(owner.key, { app_name: "names-target" });
      await db.changes();
      const labels = new Map<string, number>();
      const input = fc.record({
        name: fc.oneof({ arbitrary: honest, weight: 2 }, withInvisible, withLookAlike),
        route: fc.constantFrom("POST /apps", "PATCH /apps/{app_id}", "POST /variants/configs/add"),
      });
      await fuzz(
        "new names",
        REPLAY,
        input,
        async ({ name: { label, name, why }, route }) => {
          labels.set(label, (labels.get(label) ?? 0) + 1);
          const model = db.model;
          const [field, loc] = route.endsWith("add")
            ? ["slug", ["body", "variant_ref", "slug"]]
            : ["app_name", ["body", "app_name"]];
          const response =
            route === "POST /apps"
              ? await send("POST", "/apps", { key: owner.key, body: { app_name: name } })
              : route === "PATCH /apps/{app_id}"
                ? await send("PATCH", `/apps/${appId}`, { key: owner.key, body: { app_name: name } })
                : await send("POST", "/variants/configs/add", {
                    key: owner.key,
                    body: { variant_ref: { slug: name }, application_ref: { id: appId } },
                  });
          const answer = { status: response.status, body: await response.json() };
          const changed = await db.changes();
          // The oracle the other fuzz files use is sure of every name made here, and agrees.
          expect(newNameIsValid(name), `the oracle, on ${JSON.stringify(name)}`).toBe(why === undefined);
          if (why !== undefined) {
            expect(answer).toEqual({
              status: 422,
              body: { detail: [{ loc, msg: expect.stringMatching(/^Value error, /), type: "value_error" }] },
            });
            const { msg } = (answer.body as { detail: { msg: string }[] }).detail[0];
            expect(msg.startsWith(`Value error, ${field} ${why}`), msg).toBe(true);
            unchanged(changed);
            return response.status;
          }
          const stored = name.normalize("NFC");
          if (route === "POST /apps") {
            if (model.appByName(owner.projectId, stored)) {
              expectDetail(answer.status, answer.body, 409, "App with the same name already exists");
              unchanged(changed);
            } else {
              expect(answer).toEqual({ status: 200, body: { app_id: expect.any(String), app_name: stored } });
              const created = { id: (answer.body as { app_id: string }).app_id, name: stored, project_id: owner.projectId };
              const rest = expectEvents(changed, appEvent(model, owner, "app.created", created));
              expect(rest.apps).toEqual({ added: [expect.objectContaining(created)], removed: [] });
              expect(Object.keys(rest).sort()).toEqual(["apps", "environments"]);
            }
          } else if (route === "PATCH /apps/{app_id}") {
            if (model.appsOfProject(owner.projectId).some((other) => other.id !== appId && other.name === stored)) {
              expectDetail(answer.status, answer.body, 409, "App with the same name already exists");
              unchanged(changed);
            } else {
              expect(answer).toEqual({ status: 200, body: { app_id: appId, app_name: stored } });
              expect(db.model.apps.get(appId)?.name).toBe(stored);
              // A rename records its event; the same name again, none.
              const before = model.apps.get(appId)!;
              const previous = { previous_app_name: before.name };
              const renamed = appEvent(model, owner, "app.renamed", { ...before, name: stored }, previous);
              const rest = expectEvents(changed, ...(before.name === stored ? [] : [renamed]));
              expect(Object.keys(rest)).toEqual(Object.keys(rest).length > 0 ? ["apps"] : []);
            }
          } else if (model.variantsOf(appId).some((variant) => variant.name === stored)) {
            expectDetail(answer.status, answer.body, 400, "Config already exists.");
            unchanged(changed);
          } else {
            expect(answer).toMatchObject({ status: 200, body: { variant_ref: { slug: stored, version: 1 } } });
            const revision_id = (answer.body as { variant_ref: { id: string } }).variant_ref.id;
            const added = { config_name: stored, revision: 1, revision_id };
            const rest = expectEvents(changed, appEvent(model, owner, "config.added", model.apps.get(appId)!, added));
            expect(rest.app_variants).toEqual({
              added: [expect.objectContaining({ app_id: appId, name: stored })],
              removed: [],
            });
            expect(Object.keys(rest).sort()).toEqual(["app_variant_revisions", "app_variants"]);
          }
          return response.status;
        },
        [200, 422],
        runs,
      );
      console.info(`new names: by label: ${JSON.stringify(Object.fromEntries([...labels].sort()))}`);
      if (REPLAY["new names"]?.path === undefined) {
        const all = [...HONEST.map(([label]) => label), "an invisible, bidi or filler character inserted"];
        for (const label of [...all, "a Cyrillic look-alike among Latin letters", "a Greek look-alike among Latin letters"])
          expect(labels.get(label) ?? 0, `${label}: never generated`).toBeGreaterThan(0);
      }
      expect(await databaseProblems()).toEqual([]);
    },
    TIMEOUT,
  );
});
