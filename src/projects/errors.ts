import { ApiError, forbidden } from "../http/errors";
import type { Protection, ProtectionOutcome } from "./protection.sql.ts";

export const projectNotFound = () => new ApiError(404, "Project not found");

/** The settings an outcome found, or the error that says why none were. */
export function protectionOf(outcome: ProtectionOutcome): Protection {
  if (outcome.outcome !== "done") throw outcome.outcome === "not_found" ? projectNotFound() : forbidden();
  return outcome.protection;
}
