import type { JsonObject } from '../json/json-value.js';

/** The version both contract documents carry: the gateway's own (package.json). */
export const CONTRACT_VERSION = '0.1.0';

/** Who answers for both contracts, the HTTP API's (OpenAPI) and the topics' (AsyncAPI). */
export const CONTRACT_CONTACT: JsonObject = { name: 'core-gateway maintainers' };

/** The gateway is private to the platform (package.json: "private"); no open licence is granted. */
export const CONTRACT_LICENSE_NAME = 'Proprietary: for the services of the device-management platform';

/**
 * OpenAPI 3.1 wants an SPDX identifier (or a URL) beside the name; a licence of one's own
 * is a LicenseRef in SPDX. AsyncAPI 3.0 has no identifier field.
 */
export const OPENAPI_LICENSE: JsonObject = { name: CONTRACT_LICENSE_NAME, identifier: 'LicenseRef-Proprietary' };
