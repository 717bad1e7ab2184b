import { ApiError, validationFailed } from "../http/errors";

export const webhookNotFound = () => new ApiError(404, "Webhook not found");

export const deliveryNotFound = () => new ApiError(404, "Delivery not found for this webhook");

export const webhookDisabled = () => new ApiError(409, "This webhook is disabled: enable it (PATCH enabled: true) first");

export const webhooksNotSetUp = () =>
  new ApiError(501, "Webhooks are not set up on this service: its operator must set the WEBHOOK_SECRETS_KEY secret");

// A 422 in FastAPI's list shape, like the other body refusals of POST /webhooks.
export const webhookLimitReached = (limit: number) =>
  validationFailed([
    {
      loc: ["body"],
      msg: `Value error, this organization already has ${limit} webhooks, the most it may have: delete one to add another`,
      type: "value_error",
    },
  ]);
