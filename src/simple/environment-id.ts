import { v5 as uuidv5 } from "uuid";

/**
 * The current API's environment is project-wide: all apps' environments of one name (docs/CURRENT-SDK-API.md). Its id
 * is derived, not stored: a name-based UUID (RFC 9562 version 5) of the name within the project, the same for every
 * read, made by no write.
 */
export const environmentIdOf = (projectId: string, name: string) => uuidv5(name, projectId);
