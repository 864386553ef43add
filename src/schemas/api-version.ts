/**
 * The version of the HTTP interface these schemas describe, served as the
 * OpenAPI document's info.version. It moves only when the interface does,
 * not with releases of this package, whose version lives in package.json
 * alone (`plant-store --version` reads it there).
 */
export const API_VERSION = '1.0.0';
