import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

/*
 * The documents the code answers to are in the repository (docs/): every document that a comment or a message in
 * src/ or test/ cites (a name in capitals ending in .md, with its folder if any, or any docs/....md) is a file of the
 * repository, named from its root, so that a clone can follow every citation; a section cited in it
 * (`docs/design.md, "Choices"`) is one of its headings or bold leads; the README's and the docs' links lead to files.
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

/** A cited document: an upper-case name ending in .md, with the folders before it (`docs/EVENTS.md`), or a docs/ path. */
const CITATION = /(?<![\w./-])((?:\.{0,2}[\w-]*\/)*[A-Z][A-Z0-9_-]*\.md|docs\/(?:[\w-]+\/)*[\w-]+\.md)\b/g;

/** A section of a document, cited by its heading's or bold lead's first words: `docs/operating.md, "Deploying"`. */
const SECTION_CITATION = /(?<![\w./-])(docs\/(?:[\w-]+\/)*[\w-]+\.md)\)?,? "([^"]+)"/g;

/** A markdown link's target: `[text](target)`. */
const LINK = /\]\(([^)\s]+)\)/g;

/** The README and every document under docs/, as paths from the root. */
const DOCUMENTS = [
  "README.md",
  ...readdirSync(path.join(ROOT, "docs"), { recursive: true, encoding: "utf8" })
    .filter((file) => file.endsWith(".md"))
    .map((file) => path.join("docs", file)),
];

const read = (file: string) => readFileSync(path.join(ROOT, file), "utf8");

/** Whether `document` has a heading, or a bold lead, that begins with `section`. */
function hasSection(document: string, section: string): boolean {
  const text = read(document);
  return (
    text.includes(`**${section}`) ||
    text.split("\n").some((line) => line.replace(/^#+ /, "") !== line && line.replace(/^#+ /, "").startsWith(section))
  );
}

describe("citations", () => {
  it("every document cited in src/ and test/ is in the repository, named from its root", () => {
    const cited = sources("src", "test").flatMap(([file, text]) =>
      [...text.matchAll(CITATION)].map((match) => ({ file, document: match[1] })),
    );
    expect(cited.length).toBeGreaterThan(30);
    const unresolved = cited.filter(({ document }) => !existsSync(path.join(ROOT, document)) || document.startsWith("."));
    expect(unresolved).toEqual([]);
  });

  it("the README and the documents in docs/ cite only documents that are there too", () => {
    const cited = DOCUMENTS.flatMap((document) =>
      [...read(document).matchAll(CITATION)].map((match) => ({ document, cited: match[1] })),
    );
    // SPEC's header names the developers' guide, which is the team's, not the code's.
    const guide = `DEVELOPERS${".md"}`;
    // A name is the repository's (docs/EVENTS.md), the citing file's own folder's (a link up from docs/), or a spec's in docs/.
    const found = ({ document, cited }: { document: string; cited: string }) =>
      [cited, path.join(path.dirname(document), cited), path.join("docs", path.basename(cited))].some((name) =>
        existsSync(path.join(ROOT, name)),
      );
    expect(cited.filter((citation) => citation.cited !== guide && !found(citation))).toEqual([]);
  });

  it("every section cited in src/, test/, wrangler.toml and the documents is a heading or bold lead of its document", () => {
    const citing: [string, string][] = [
      ...sources("src", "test"),
      ...["wrangler.toml", "BENCHMARKS.md", ...DOCUMENTS].map((file): [string, string] => [file, read(file)]),
    ];
    const cited = citing.flatMap(([file, text]) =>
      [...text.matchAll(SECTION_CITATION)].map((match) => ({ file, document: match[1], section: match[2] })),
    );
    expect(cited.length).toBeGreaterThan(10);
    expect(
      cited.filter(({ document, section }) => !existsSync(path.join(ROOT, document)) || !hasSection(document, section)),
    ).toEqual([]);
  });

  it("every link of the README and of docs/ to another file leads to a file of the repository", () => {
    const links = DOCUMENTS.flatMap((document) =>
      [...read(document).matchAll(LINK)]
        .map((match) => match[1])
        .filter((target) => !/^(https?:|mailto:|#)/.test(target))
        .map((target) => ({ document, target })),
    );
    expect(links.length).toBeGreaterThan(20);
    const broken = links.filter(
      ({ document, target }) => !existsSync(path.join(ROOT, path.dirname(document), target.split("#")[0])),
    );
    expect(broken).toEqual([]);
  });
});
