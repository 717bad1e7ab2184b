import type { ProtectionRefusal } from "../core/protection.sql.ts";
import { ApiError } from "./errors";

/*
 * The errors of the core's resources (apps, variants, configs, revisions, protected environments), which several URL
 * folders answer. A feature's own errors live in its folder (src/change-requests/errors.ts, ...); these sit in http/, not
 * in core/, as core/ sits below http/ and throws nothing: its outcomes are turned into these above it.
 */

export const appEnvironmentNotFound = () => new ApiError(404, "App environment not found");

export const appNotFound = () => new ApiError(404, "App not found");

export const variantNotFound = () => new ApiError(404, "Variant not found");

// The platform's own messages, which its SDK shows as they are.
export const configNotFound = () => new ApiError(404, "Config not found.");

/**
 * A diff's revision (docs/CHANGE-REQUESTS.md §5): none of that id the caller can see, or the two of two organizations;
 * a change request's proposal (§3): no such revision of the app.
 */
export const revisionNotFound = () => new ApiError(404, "Revision not found");

export const variantRemoved = () =>
  new ApiError(409, "This revision belongs to a removed variant, which cannot be deployed again: deploy another config");

/**
 * A split's start or its verdict secret's rotation on a service that cannot keep secrets: the secret is sealed as
 * webhooks' are, under WEBHOOK_SECRETS_KEY (src/webhooks/secret-box.ts), which a deployed service may lack.
 */
export const splitsNotSetUp = () =>
  new ApiError(
    501,
    "Splits are not set up on this service: their verdict secrets need the WEBHOOK_SECRETS_KEY secret, which its operator must set",
  );

export const environmentNotFound = () => new ApiError(404, "Environment not found");

export const environmentMovedOn = () =>
  new ApiError(412, "The environment has changed since the ETag given in If-Match: read it again, then retry");

/** A direct write to a protected environment (docs/CHANGE-REQUESTS.md §2): it goes through a change request. */
export const environmentProtected = (appId: string, environment: string) =>
  new ApiError(409, {
    code: "environment_protected",
    app_id: appId,
    environment,
    message: `Environment '${environment}' is protected: propose the change with POST /change-requests.`,
    change_request_route: "POST /change-requests",
  });

/** docs/SPLITS.md §1: an environment with no split running (a GET, a change, an end, a verdict, a promote request). */
export const noSplit = () => new ApiError(404, "No split");

/** A deploy or revert of an environment a split runs in (docs/SPLITS.md §1): the split is ended first. */
export const splitRunning = (appId: string, environment: string) =>
  new ApiError(409, {
    code: "split_running",
    app_id: appId,
    environment,
    message: `A split runs in environment '${environment}': end it first (DELETE …/split?outcome=promote|abort).`,
  });

export const protectionBypassForbidden = () =>
  new ApiError(403, "Bypassing the protection of this environment is not allowed for your role.");

/**
 * A write a protected environment, or a split running there, refused (src/core/protection.sql.ts): its 409, or the 403
 * of a bypass not allowed.
 */
export const protectionRefused = ({
  refusal,
  appId,
  environment,
}: {
  refusal: ProtectionRefusal;
  appId: string;
  environment: string;
}) =>
  refusal === "split_running"
    ? splitRunning(appId, environment)
    : refusal === "protected"
      ? environmentProtected(appId, environment)
      : protectionBypassForbidden();
