// The span attributes the store, the webhook deliveries and the JWKS fetches
// set: names of OpenTelemetry's semantic conventions, written out here so that
// the code making spans imports nothing of OpenTelemetry while tracing is off.

export const DB_SYSTEM_NAME = 'db.system.name';
export const DB_OPERATION_NAME = 'db.operation.name';
export const DB_QUERY_TEXT = 'db.query.text';
export const HTTP_REQUEST_METHOD = 'http.request.method';
export const HTTP_RESPONSE_STATUS_CODE = 'http.response.status_code';
export const SERVER_ADDRESS = 'server.address';
export const SERVER_PORT = 'server.port';
