import { en } from "zod/locales";
import * as z from "zod/mini";
import { documented } from "./documentation";
import { newNameRefusal } from "./names";

// zod/mini loads no locale (its messages would all be "Invalid input"): the messages of the issues passed on as zod
// words them (an option not in an enum, an unknown key, a bad date, a length) stay those of classic zod's English.
z.config(en());

// U+2028 LINE SEPARATOR and U+2029 PARAGRAPH SEPARATOR break lines as \n does (in a mail's subject, in a log line).
const NO_CONTROLS_OR_LINE_BREAKS = /^[^\p{Cc}\u2028\u2029]*$/u;
// A JSON escape can carry half of a surrogate pair, which is not text: it cannot be stored as UTF-8.
const LONE_SURROGATE = /\p{Cs}/u;

/** An id as a UUID string, compared in its canonical lowercase form. */
export const uuid = /* @__PURE__ */ z.pipe(
  z.uuid(),
  z.transform((id) => id.toLowerCase()),
);

/** A query parameter that is `true` or `false` (absent: false); anything else is a 422. */
export const queryFlag = /* @__PURE__ */ z.pipe(
  z.optional(z.enum(["true", "false"])),
  z.transform((value) => value === "true"),
);

/**
 * The schema refined by a type guard, its output typed as the guard narrows it (as classic zod's `.refine` typed it;
 * mini's `.check` keeps the type).
 */
export const narrowedBy = <Schema extends z.ZodMiniType, Narrowed extends z.output<Schema>>(
  schema: Schema,
  guard: (value: z.output<Schema>) => value is Narrowed,
  message: string,
) => schema.check(z.refine(guard, message)) as unknown as z.ZodMiniType<Narrowed, z.input<Schema>>;

/** The path parameters of every route under /apps/{app_id}. */
export const AppParams = /* @__PURE__ */ z.object({ app_id: uuid });

/**
 * A name as clients send it: 1 to 255 code points (as pydantic counts), no control characters or line breaks, valid
 * Unicode.
 * `nfc`: names that look the same are the same name (stored normalised), and a blank name is refused.
 */
export function nameField(field: string, { nfc = false } = {}) {
  const name = (nfc ? z.string().check(z.normalize("NFC")) : z.string()).check(
    z.minLength(1, { abort: true }),
    z.maxLength(255, { abort: true }),
  );
  return (nfc ? name.check(z.refine((value) => value.trim() !== "", `${field} must not be blank`)) : name).check(
    z.refine((value) => NO_CONTROLS_OR_LINE_BREAKS.test(value), `${field} must not contain control characters or line breaks`),
    z.refine((value) => !LONE_SURROGATE.test(value), `${field} must be valid Unicode (no unpaired surrogates)`),
  );
}

/**
 * The name of a new app or config: a name (NFC), nothing invisible in it and nothing that passes for another name
 * (names.ts). Only where a name is made: lookups take any name, so that rows made before stay reachable.
 */
export const newNameField = (field: string) =>
  nameField(field, { nfc: true }).check(
    z.superRefine(
      (value, context) => {
        const refusal = newNameRefusal(value);
        if (refusal) context.addIssue(`${field} ${refusal}`);
      },
      // Once the name is valid otherwise: a blank one is told so, not also that it has nothing visible.
      { when: (payload) => payload.issues.length === 0 },
    ),
  );

/**
 * A whole number in a path (a revision number), as pydantic parses one: digits only, leading zeros and all. One
 * past 2^53 names nothing that exists here: it becomes 0, which no revision has.
 */
export const integerParam = /* @__PURE__ */ z.pipe(
  z.string().check(
    z.refine((value) => /^[0-9]+$/.test(value), {
      message: "Input should be a valid integer, unable to parse string as an integer",
      params: { pydanticType: "int_parsing" },
    }),
  ),
  z.transform((value) => (Number.isSafeInteger(Number(value)) ? Number(value) : 0)),
);

const isJsonObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * How deep a stored JSON value may nest (the value itself is level 1): far below SQLite's own limit of 1,000, past
 * which its `json_valid` CHECK fails the write, and far beyond any config (a protobuf parser's default is 100 too).
 */
export const MAX_JSON_DEPTH = 100;

/** Whether the value nests deeper than `max` levels; the walk stops there, however deep the value goes. */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  if (typeof value !== "object" || value === null) return false;
  if (max === 0) return true;
  return Object.values(value).some((child) => nestsDeeperThan(child, max - 1));
}

/**
 * Any JSON object of at most MAX_JSON_DEPTH levels, taken as sent: zod's record and object types copy what they
 * validate, and lose a key named `__proto__` on the way (the copy's prototype takes it).
 */
export const jsonObject = (field: string) =>
  z
    .pipe(
      z.unknown().check(
        z.refine(isJsonObject, {
          message: "Input should be a valid dictionary",
          params: { pydanticType: "dict_type" },
          abort: true,
        }),
        z.refine(
          (value) => !nestsDeeperThan(value, MAX_JSON_DEPTH),
          `${field} must not nest deeper than ${MAX_JSON_DEPTH} levels`,
        ),
      ),
      z.transform((value) => value as Record<string, unknown>),
    )
    .apply(documented(globalThis.DOCUMENTATION && { type: "object" }));

/**
 * Text that can be stored as sent: no half of a surrogate pair (a JSON escape can carry one), and no NUL, which
 * SQLite's text functions (json_object in events, among others) take for the end of the text.
 */
export const storableText = (field: string) =>
  z.string().check(
    z.refine((value) => !LONE_SURROGATE.test(value), {
      message: `${field} must be valid Unicode (no unpaired surrogates)`,
      abort: true,
    }),
    z.refine((value) => !value.includes("\0"), { message: `${field} must not contain NUL characters`, abort: true }),
  );

/** A commit message, as the platform keeps one: at most 255 characters. */
export const commitMessage = (field: string) => storableText(field).check(z.maxLength(255));

// The whole text, not what URL parsing keeps of it: the parser drops tabs and newlines, and trims spaces and controls.
const HTTP_URL_TEXT = /^https?:\/\/[^\p{Cc}\s]+$/iu;

function parsesAsUrl(value: string): boolean {
  try {
    return new URL(value).host !== "";
  } catch {
    return false;
  }
}

/** `""` (none), or an absolute http(s) URL with no space or control character, such as a browser can open. */
export const httpUrlOrEmpty = (field: string) =>
  storableText(field).check(
    z.maxLength(2048),
    z.refine(
      (value) => value === "" || (HTTP_URL_TEXT.test(value) && parsesAsUrl(value)),
      `${field} must be "" or an absolute http:// or https:// URL without spaces or control characters`,
    ),
  );

/** An email address as an account holds it: compared without case (the database's NOCASE), stored as sent. */
export const emailField = /* @__PURE__ */ z.pipe(
  z.string().check(z.trim(), z.maxLength(254)),
  z.email({ message: "value is not a valid email address" }),
);
