import { ApiError, validationFailed } from "../http/errors";

export const appNameTaken = () => new ApiError(409, "App with the same name already exists");

/** A split of an environment that runs nothing: there is no base to split from. */
export const nothingDeployed = (environment: string) =>
  new ApiError(409, {
    code: "nothing_deployed",
    message: `Environment '${environment}' runs nothing: deploy a base before splitting it.`,
  });

const bodyIssue = (loc: string[], msg: string) => validationFailed([{ loc: ["body", ...loc], msg, type: "value_error" }]);

export const candidateRequired = () => bodyIssue(["candidate"], "Value error, a split starts with a candidate");

export const candidateIsBase = () =>
  bodyIssue(["candidate"], "Value error, the candidate is the revision the environment runs (its base)");
