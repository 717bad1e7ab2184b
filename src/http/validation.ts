import { zValidator } from "@hono/zod-validator";
import type { Context, ValidationTargets } from "hono";
import { bodyLimit } from "hono/body-limit";
import { createMiddleware } from "hono/factory";
import type * as z from "zod/mini";
import { payloadTooLarge, unsupportedMediaType, type ValidationIssue, validationFailed } from "./errors";

export const MAX_BODY_BYTES = 16 * 1024;
/** Config commits carry whole params objects (prompts, schemas): they may be this large. */
export const MAX_CONFIG_BODY_BYTES = 256 * 1024;

type Location = "body" | "path" | "query";

/** Maps a zod issue to the message and type FastAPI (pydantic) would give, which clients already parse. */
function toValidationIssue(location: Location, issue: z.core.$ZodIssue, input: unknown): ValidationIssue {
  const loc = [location, ...issue.path.map((part) => (typeof part === "symbol" ? String(part) : part))];
  switch (issue.code) {
    case "invalid_type":
      if (valueAt(input, issue.path) === undefined) return { loc, msg: "Field required", type: "missing" };
      if (issue.expected === "object") {
        return { loc, msg: "Input should be a valid dictionary or object to extract fields from", type: "model_attributes_type" };
      }
      if (issue.expected === "record") return { loc, msg: "Input should be a valid dictionary", type: "dict_type" };
      if (issue.expected === "int") return { loc, msg: "Input should be a valid integer", type: "int_type" };
      // 1e400 parses to Infinity.
      if (issue.expected === "number" && typeof valueAt(input, issue.path) === "number") {
        return { loc, msg: "Input should be a finite number", type: "finite_number" };
      }
      return { loc, msg: `Input should be a valid ${issue.expected}`, type: `${issue.expected}_type` };
    case "too_small":
      if (issue.origin === "number" || issue.origin === "int") {
        return { loc, msg: `Input should be greater than or equal to ${issue.minimum}`, type: "greater_than_equal" };
      }
      if (issue.origin === "array") return listLengthIssue(loc, "least", issue.minimum, valueAt(input, issue.path));
      return {
        loc,
        msg: `String should have at least ${issue.minimum} character${issue.minimum === 1 ? "" : "s"}`,
        type: "string_too_short",
      };
    case "too_big":
      // An integer past 2^53 - 1 (which JSON.parse cannot hold exactly) is refused as a number, not as a string.
      if (issue.origin === "number" || issue.origin === "int") {
        return { loc, msg: `Input should be less than or equal to ${issue.maximum}`, type: "less_than_equal" };
      }
      if (issue.origin === "array") return listLengthIssue(loc, "most", issue.maximum, valueAt(input, issue.path));
      return { loc, msg: `String should have at most ${issue.maximum} characters`, type: "string_too_long" };
    case "invalid_format":
      if (issue.format === "uuid") return { loc, msg: "Input should be a valid UUID", type: "uuid_parsing" };
      return { loc, msg: issue.message, type: "value_error" };
    case "custom":
      // A refinement may stand for a pydantic type check (see src/http/fields.ts): a missing value is then "missing".
      if (typeof issue.params?.pydanticType === "string") {
        if (valueAt(input, issue.path) === undefined) return { loc, msg: "Field required", type: "missing" };
        return { loc, msg: issue.message, type: issue.params.pydanticType };
      }
      return { loc, msg: `Value error, ${issue.message}`, type: "value_error" };
    default:
      return { loc, msg: `Value error, ${issue.message}`, type: "value_error" };
  }
}

/** A list of the wrong length, in pydantic's words: "List should have at most 1 item after validation, not 2". */
function listLengthIssue(loc: ValidationIssue["loc"], bound: "least" | "most", limit: number | bigint, list: unknown) {
  const length = Array.isArray(list) ? list.length : 0;
  const items = `${limit} item${Number(limit) === 1 ? "" : "s"}`;
  return {
    loc,
    msg: `List should have at ${bound} ${items} after validation, not ${length}`,
    type: bound === "least" ? "too_short" : "too_long",
  };
}

function valueAt(input: unknown, path: PropertyKey[]): unknown {
  return path.reduce<unknown>(
    (value, key) =>
      value !== null && typeof value === "object" && Object.hasOwn(value, key)
        ? (value as Record<PropertyKey, unknown>)[key]
        : undefined,
    input,
  );
}

const LOCATIONS: Partial<Record<keyof ValidationTargets, Location>> = { json: "body", param: "path", query: "query" };

/** zod-validator bound to the service's 422 shape. */
export const validate = <Target extends "json" | "param" | "query", Schema extends z.ZodMiniType>(
  target: Target,
  schema: Schema,
) =>
  zValidator(target, schema, (result) => {
    if (!result.success) {
      const location = LOCATIONS[target] ?? "body";
      throw validationFailed(result.error.issues.map((issue) => toValidationIssue(location, issue, result.data)));
    }
  });

/**
 * Refuses `?dry_run` (any value) on a write that has no dry-run (src/http/route.ts `takesDryRun`): a caller who asks
 * for one must never get the write instead.
 */
export const noDryRun = createMiddleware(async (c, next) => {
  if (c.req.queries("dry_run") !== undefined) {
    throw validationFailed([
      {
        loc: ["query", "dry_run"],
        msg: "Extra inputs are not permitted: this operation has no dry-run (nothing was written)",
        type: "extra_forbidden",
      },
    ]);
  }
  await next();
});

const JSON_MEDIA_TYPE = /^application\/([\w.-]+\+)?json$/i;
const STRICT_UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

/** A JSON body's value, or the 422 of a body not JSON (Hono would answer it with a plain 400). */
async function jsonInput(c: Context): Promise<unknown> {
  let text: string;
  try {
    // Decoding would otherwise put U+FFFD for each bad byte, and store text that was never sent.
    text = STRICT_UTF8.decode(await c.req.arrayBuffer());
  } catch {
    throw validationFailed([{ loc: ["body"], msg: "JSON decode error: the body is not valid UTF-8", type: "json_invalid" }]);
  }
  if (text.trim() === "") {
    throw validationFailed([{ loc: ["body"], msg: "Field required", type: "missing" }]);
  }
  try {
    return JSON.parse(text);
  } catch {
    throw validationFailed([{ loc: ["body"], msg: "JSON decode error", type: "json_invalid" }]);
  }
}

/**
 * A signed body (a route's `body.signed`), checked by its handler once the signature is: as jsonBody and
 * validate("json") would, so that a caller who cannot sign learns nothing of what a good body is (its media type
 * excepted, a 415 before).
 */
export async function signedBody<Schema extends z.ZodMiniType>(c: Context, schema: Schema): Promise<z.output<Schema>> {
  const input = await jsonInput(c);
  const result = schema.safeParse(input);
  if (!result.success) throw validationFailed(result.error.issues.map((issue) => toValidationIssue("body", issue, input)));
  return result.data;
}

/**
 * Guards a JSON body before validation: 413 over the size limit, 415 for another media type,
 * 422 for a body that is empty, not UTF-8 or not JSON; a signed body's size and media type only (its handler checks
 * the rest once it has checked the signature).
 */
export const jsonBody = (maxBytes = MAX_BODY_BYTES, signed = false) => {
  const limit = bodyLimit({
    maxSize: maxBytes,
    onError: () => {
      throw payloadTooLarge(maxBytes);
    },
  });
  const parse = createMiddleware(async (c, next) => {
    const mediaType = (c.req.header("Content-Type") ?? "").split(";")[0].trim();
    if (!JSON_MEDIA_TYPE.test(mediaType)) throw unsupportedMediaType();
    if (!signed) await jsonInput(c);
    await next();
  });
  return [limit, parse] as const;
};
