/**
 * An app has one implicit base, named "app", whose id is the app's; a variant's name is the platform's
 * `<base>.<config>`, which is also what an environment record shows as `deployed_variant_name`.
 */
export const BASE_NAME = "app";

export const variantName = (configName: string) => `${BASE_NAME}.${configName}`;
