import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

/*
 * The documents the code answers to are in the repository (docs/): every document that a comment or a message in
 * src/ or test/ cites (a name in capitals ending in .md, with its folder if any) is a file of the repository, named
 * from its root, so that a clone can follow every citation.
 */

const ROOT = path.resolve(import.meta.dirname, "../..");

/** Every .ts file under the folders, as [path from the root, text]. */
function sources(...folders: string[]): [string, string][] {
  return folders.flatMap((folder) =>
    readdirSync(path.join(ROOT, folder), { recursive: true, encoding: "utf8" })
      .filter((file) => file.endsWith(".ts") && !file.includes("node_modules"))
      .map((file): [string, string] => [path.join(folder, file), readFileSync(path.join(ROOT, folder, file), "utf8")]),
  );
}

/** A cited document: an upper-case name ending in .md, with the folders before it (`docs/EVENTS.md`). */
const CITATION = /(?<![\w./-])((?:\.{0,2}[\w-]*\/)*[A-Z][A-Z0-9_-]*\.md)\b/g;

describe("citations", () => {
  it("every document cited in src/ and test/ is in the repository, named from its root", () => {
    const cited = sources("src", "test").flatMap(([file, text]) =>
      [...text.matchAll(CITATION)].map((match) => ({ file, document: match[1] })),
    );
    expect(cited.length).toBeGreaterThan(30);
    const unresolved = cited.filter(({ document }) => !existsSync(path.join(ROOT, document)) || document.startsWith("."));
    expect(unresolved).toEqual([]);
  });

  it("the documents in docs/ cite only documents that are there too", () => {
    const documents = readdirSync(path.join(ROOT, "docs")).filter((file) => file.endsWith(".md"));
    const cited = documents.flatMap((document) =>
      [...readFileSync(path.join(ROOT, "docs", document), "utf8").matchAll(CITATION)].map((match) => match[1]),
    );
    // SPEC's header names the developers' guide, which is the team's, not the code's.
    const guide = `DEVELOPERS${".md"}`;
    expect(cited.filter((name) => name !== guide && !existsSync(path.join(ROOT, "docs", path.basename(name))))).toEqual([]);
  });
});
