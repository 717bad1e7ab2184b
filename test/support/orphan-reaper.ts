/**
 * Kills, every few seconds while the suite runs, each workerd of this checkout whose parent is gone (its parent is then
 * init, pid 1). A runtime a test file's process opens itself (miniflare, through the CLI's getPlatformProxy) outlives
 * that process when the pool ends it before its exit hooks run; it then spins on its closed control pipe, seen at half
 * a core for the rest of a run. A runtime in use always has its Node process as parent. Linux only (/proc).
 */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { join } from "node:path";

const WORKERD = join(import.meta.dirname, "../../node_modules/@cloudflare/workerd-linux-64/bin/workerd");

function reapOrphans(): void {
  for (const pid of readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
    try {
      // /proc/<pid>/stat: "pid (comm) state ppid ..."; comm may hold spaces, so read after its closing parenthesis.
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const ppid = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1];
      if (ppid === "1" && readlinkSync(`/proc/${pid}/exe`) === WORKERD) process.kill(Number(pid), "SIGKILL");
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
}

if (process.platform === "linux") setInterval(reapOrphans, 5_000).unref();
