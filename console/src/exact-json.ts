/*
 * JSON with its numbers exactly as written: the service keeps params digit for digit (12345678901234567890, 1.0), which
 * JSON.parse would round or reformat. Parsed here into values whose numbers stay their text, and printed back indented.
 */

/** A number as written in the JSON text. */
export class ExactNumber {
  constructor(readonly text: string) {}
}

/** An object's members in the order written (a JavaScript object would put integer-like keys first). */
export class ExactObject {
  constructor(readonly entries: [string, ExactValue][]) {}
  get(key: string): ExactValue | undefined {
    return this.entries.find(([name]) => name === key)?.[1];
  }
}

export type ExactValue = null | boolean | string | ExactNumber | ExactObject | ExactValue[];

const TOKEN = /\s*(?:([{}[\]:,])|("(?:[^"\\]|\\.)*")|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)|(true|false|null))/y;

/** Parses valid JSON (the service's answers; the editor checks with JSON.parse first), keeping numbers' text. */
export function parseExact(text: string): ExactValue {
  TOKEN.lastIndex = 0;
  const next = () => {
    const match = TOKEN.exec(text);
    if (!match) throw new SyntaxError(`Invalid JSON at ${TOKEN.lastIndex}`);
    return match;
  };
  const value = (match: RegExpExecArray): ExactValue => {
    const [, punctuation, string, number, literal] = match;
    if (string !== undefined) return JSON.parse(string) as string;
    if (number !== undefined) return new ExactNumber(number);
    if (literal !== undefined) return JSON.parse(literal) as boolean | null;
    if (punctuation === "[") {
      const items: ExactValue[] = [];
      for (let token = next(); token[1] !== "]"; token = next()) items.push(value(token[1] === "," ? next() : token));
      return items;
    }
    if (punctuation === "{") {
      const entries: [string, ExactValue][] = [];
      for (let token = next(); token[1] !== "}"; token = next()) {
        const key = JSON.parse((token[1] === "," ? next() : token)[2]) as string;
        next(); // the colon
        entries.push([key, value(next())]);
      }
      return new ExactObject(entries);
    }
    throw new SyntaxError(`Unexpected ${punctuation} in JSON`);
  };
  return value(next());
}

/** A string as JSON writes it, but its line breaks as lines: for reading, not for parsing again. */
export const readableString = (text: string) =>
  `"${text
    .split("\n")
    .map((line) => JSON.stringify(line).slice(1, -1))
    .join("\n")}"`;

/**
 * The value as indented JSON, numbers as they were written; strings as JSON writes them, or as `string` does (a page
 * shows prompts with `readableString`, their lines as lines).
 */
export function formatExact(value: ExactValue, indent = "", string: (text: string) => string = JSON.stringify): string {
  if (value instanceof ExactNumber) return value.text;
  if (typeof value === "string") return string(value);
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  const inner = `${indent}  `;
  const format = (item: ExactValue) => formatExact(item, inner, string);
  if (Array.isArray(value)) {
    if (value.length === 0) return "[]";
    return `[\n${value.map((item) => inner + format(item)).join(",\n")}\n${indent}]`;
  }
  const { entries } = value;
  if (entries.length === 0) return "{}";
  return `{\n${entries.map(([key, item]) => `${inner}${JSON.stringify(key)}: ${format(item)}`).join(",\n")}\n${indent}}`;
}
