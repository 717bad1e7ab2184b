/**
 * A run's temporary folder (copy of the code, local D1), removed whatever way the process ends unless kept, with
 * every program group still running (wrangler dev, the receiver).
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { killAllGroups } from "../support/processes";

let folder: string | undefined;
let keepFolder = false;

/** Stops every program group still running and removes the folder (unless kept); again, it does nothing. */
export function cleanUpNow(): void {
  killAllGroups();
  // The copies link the repository's node_modules: rmSync removes a link, never what it points to.
  if (folder && !keepFolder) rmSync(folder, { recursive: true, force: true });
  folder = undefined;
}

/** A new folder under the system's temporary one, named from `prefix`; kept at the end if `keep`. */
export function makeWorkFolder(prefix: string, keep: boolean): string {
  keepFolder = keep;
  folder = mkdtempSync(join(os.tmpdir(), prefix));
  return folder;
}

process.on("exit", cleanUpNow);
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
  process.on(signal, () => {
    console.error(`\n${signal}: stopping the workers${folder && !keepFolder ? ` and removing ${folder}` : ""}`);
    cleanUpNow();
    process.exit(signal === "SIGINT" ? 130 : 143);
  });
}
