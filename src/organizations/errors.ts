import { ApiError } from "../http/errors";

export const organizationNotFound = () => new ApiError(404, "Organization not found");

export const alreadyMember = () => new ApiError(409, "This email is already a member of the organization");

export const invitationNotFound = () => new ApiError(404, "Invitation not found");

export const invitationUsed = () => new ApiError(409, "This invitation has already been accepted");

export const invitationExpired = () => new ApiError(410, "This invitation has expired: ask for it to be sent again");

export const invitationReplaced = () => new ApiError(410, "This invitation was replaced by a newer one: use the latest token");

export const projectNotInWorkspace = () => new ApiError(404, "Project not found in this workspace");

export const invitationNeedsKey = () =>
  new ApiError(401, "This email already has an account: accept the invitation with that account's API key", {
    "WWW-Authenticate": 'ApiKey realm="app-management", Bearer realm="app-management"',
  });

/** An invitation whose token was not mailed: the inviter saw it, so it alone proves nothing of the invitee. */
export const invitationNeedsInviteeKey = () =>
  new ApiError(
    401,
    "This invitation's token was not sent by email, so it alone makes no account: accept it with the invitee's own " +
      "API key. A new person's account is made by the service's operator; with INVITATION_EMAIL_FROM and " +
      "PUBLIC_BASE_URL set, invitations are mailed and a new person accepts with the mailed token alone",
    { "WWW-Authenticate": 'ApiKey realm="app-management", Bearer realm="app-management"' },
  );

export const invitationForAnotherEmail = () => new ApiError(403, "This invitation is for another email address");

export const invitationNotMailed = () =>
  new ApiError(
    502,
    "The invitation was made, but its email could not be sent: send it again (POST .../invite/resend), which voids this one",
  );

export const invitationForNewAccount = () =>
  new ApiError(
    403,
    "This invitation is for an email that has no account yet: accept it with the token alone, without an API key",
  );

/**
 * A user being made with the same email at this moment (its claim in the directory, docs/SHARDING.md §3.3, not yet
 * settled), or a claim that lapsed before the write: nothing written; a retry a moment later is answered.
 */
export const emailBeingClaimed = () => new ApiError(503, "Service temporarily unavailable", { "Retry-After": "5" });
