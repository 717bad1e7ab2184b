import { ApiError } from "../http/errors";

/** An approve naming neither the version it approves nor the request's ETag (docs/CHANGE-REQUESTS.md §3). */
export const approvalUnbound = () =>
  new ApiError(
    428,
    "Name what you approve: send the request's `version` you reviewed in the body, or If-Match with its ETag " +
      "(GET /change-requests/{id} answers both).",
  );
