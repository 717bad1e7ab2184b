/**
 * What the CLI runs again (src/cli/database.ts, retryTransient): the local tooling's failures, each as it reaches the
 * CLI, and nothing else. The lost call cannot be made to happen on demand (it needs a garbage collection to free a
 * statement between a call's start and workerd's reading of it), so its failure is made as the proxy makes it, with
 * node:assert on a false value.
 */
import assert from "node:assert";
import { describe, expect, it } from "vitest";
import { retryTransient } from "../../src/cli/database";
import { UsageError } from "../../src/cli/run-cli";

/** What getPlatformProxy throws when workerd refused a call on a statement it had freed. */
function lostCall(): unknown {
  try {
    assert(false);
  } catch (error) {
    return error;
  }
  throw new Error("assert(false) did not throw");
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

  it("throws any other failure at once: a constraint, the operator's mistake, a plain error", async () => {
    for (const failure of [
      new Error("D1_ERROR: UNIQUE constraint failed: users.email: SQLITE_CONSTRAINT"),
      new UsageError("--org: no such organization"),
      new TypeError("cannot read properties of undefined"),
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
