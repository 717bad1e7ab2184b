/**
 * What the CLI runs again (src/cli/database.ts, retryTransient): the local tooling's failures, each as it reaches the
 * CLI, and nothing else. The lost call needs a garbage collection to free a statement between a call's start and
 * workerd's reading of it, which a loaded machine makes now and then; the last test makes it happen on purpose,
 * through the admin CLI against real local D1.
 */
import { AssertionError } from "node:assert";
import { createRequire } from "node:module";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { retryTransient } from "../../src/cli/database";
import { UsageError } from "../../src/cli/run-cli";
import { applyMigrations } from "../support/wrangler";
import { admin, closeDatabases, expectJsonObject, makeTempDir, queryDirectory, removeTempDir } from "./helpers";

/** A call getPlatformProxy lost, as it reaches the CLI: workerd's failed assertion, revived by miniflare by its name. */
function lostCall(): Error {
  return Object.assign(new Error("false == true"), { name: "AssertionError" });
}

const busy = new Error("D1_ERROR: internal error; reference = 0123456789abcdef");

/** Work failing with each of `failures` in turn, then answering "done"; `attempts` counts its runs. */
function failing(...failures: unknown[]) {
  const work = {
    attempts: 0,
    run: async () => {
      work.attempts++;
      if (work.attempts <= failures.length) throw failures[work.attempts - 1];
      return "done";
    },
  };
  return work;
}

describe("retryTransient", () => {
  it("runs the work again after the proxy lost the call and after the database was busy, and answers its result", async () => {
    const work = failing(lostCall(), busy, new Error("SQLITE_BUSY: database is locked"));
    expect(await retryTransient(work.run)).toBe("done");
    expect(work.attempts).toBe(4);
  });

  it("throws any other failure at once: a constraint, the operator's mistake, a plain error, an assertion of Node's", async () => {
    for (const failure of [
      new Error("D1_ERROR: UNIQUE constraint failed: users.email: SQLITE_CONSTRAINT"),
      new UsageError("--org: no such organization"),
      new TypeError("cannot read properties of undefined"),
      // An assertion of the proxy's Node side, which may fail after workerd ran the call.
      new AssertionError({ actual: false, expected: true, operator: "==" }),
    ]) {
      const work = failing(failure);
      await expect(retryTransient(work.run)).rejects.toBe(failure);
      expect(work.attempts).toBe(1);
    }
  });

  it("gives up after six attempts, with the last failure", async () => {
    const last = lostCall();
    const work = failing(busy, busy, busy, busy, busy, last, busy);
    await expect(retryTransient(work.run)).rejects.toBe(last);
    expect(work.attempts).toBe(6);
  });
});

/** The requests of miniflare's own undici (the pool through which getPlatformProxy's asynchronous calls reach workerd). */
type Dispatch = (
  options: { headers?: unknown },
  handler: { onHeaders?: (status: number, ...rest: unknown[]) => unknown; onComplete?: (...rest: unknown[]) => unknown },
) => boolean;
const miniflareRequire = createRequire(createRequire(import.meta.url).resolve("miniflare"));
const runtimePool: { dispatch: Dispatch } = miniflareRequire("undici").Pool.prototype;

/**
 * Makes getPlatformProxy lose its next asynchronous batch as a loaded machine does: the call is held back, a garbage
 * collection takes the statements only the call names, the proxy tells workerd to free them, and only then does the
 * call go (after 2 s at the latest). Resolves to the status workerd answered the call with.
 */
function loseNextBatch(): Promise<number> {
  setFlagsFromString("--expose-gc");
  const collectGarbage: () => void = runInNewContext("gc");
  const dispatch = runtimePool.dispatch;
  return new Promise((resolveStatus) => {
    let release: (() => void) | undefined;
    runtimePool.dispatch = function (options, handler) {
      const headers = new Headers(options.headers as HeadersInit);
      if (!release && headers.get("MF-Op") === "CALL" && headers.get("MF-Op-Key") === "batch") {
        const onHeaders = handler.onHeaders;
        handler.onHeaders = function (status, ...rest) {
          runtimePool.dispatch = dispatch;
          resolveStatus(status);
          return onHeaders?.call(this, status, ...rest);
        };
        let sent = false;
        release = () => {
          if (!sent) dispatch.call(this, options, handler);
          sent = true;
        };
        collectGarbage();
        setTimeout(release, 2_000);
        return true;
      }
      if (release && headers.get("MF-Op") === "FREE") {
        const onComplete = handler.onComplete;
        const sendHeld = release;
        handler.onComplete = function (...rest) {
          sendHeld();
          return onComplete?.apply(this, rest);
        };
      }
      return dispatch.call(this, options, handler);
    };
  });
}

describe("a batch getPlatformProxy lost, through the admin CLI", () => {
  let dir: string;
  let user: { user_id: string; organization_id: string };

  beforeAll(async () => {
    dir = await makeTempDir("lost-call");
    await applyMigrations(dir);
    user = expectJsonObject(await admin(dir, "user", "create", "--email", "lost@example.com"), [
      "user_id",
      "username",
      "organization_id",
      "workspace_id",
      "project_id",
    ]);
    expect((await admin(dir, "directory", "fill")).code).toBe(0);
  });

  afterAll(async () => {
    await closeDatabases();
    await removeTempDir(dir);
  });

  it("is run again: directory fill answers as usual, though workerd refused its first batch", async () => {
    const lost = loseNextBatch();
    const filled = await admin(dir, "directory", "fill");
    expect(await lost).toBe(500);
    const nothingAdded = { users_added: 0, memberships_added: 0 };
    expect(filled).toMatchObject({ code: 0, stderr: "" });
    expect(filled.json).toEqual({ shards: { SHARD_0: nothingAdded, SHARD_1: nothingAdded }, ...nothingAdded });
    expect(await queryDirectory(dir, "SELECT user_id, organization_id FROM memberships")).toEqual([
      { user_id: user.user_id, organization_id: user.organization_id },
    ]);
  });
});
