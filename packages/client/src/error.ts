import type { ErrorBody } from './types.js';

/** A non-2xx answer from Plant Store. */
export class PlantStoreError extends Error {
  override name = 'PlantStoreError';

  constructor(
    /** The HTTP status. */
    readonly status: number,
    /** The answer's body: {error: status, message}. */
    readonly body: ErrorBody,
    /** The answer's headers (WWW-Authenticate on 401 and 403, Allow on 405...). */
    readonly headers: Headers,
  ) {
    super(`Plant Store answered ${status}: ${body.message}`);
  }
}

/** The error body of a response, or one made up from its status when it has none (a proxy's HTML page, say). */
export async function errorFrom(response: Response): Promise<PlantStoreError> {
  const text = await response.text();
  let body: ErrorBody | undefined;
  try {
    const parsed = JSON.parse(text) as Partial<ErrorBody> | null;
    if (typeof parsed?.error === 'number' && typeof parsed.message === 'string') {
      body = { error: parsed.error, message: parsed.message };
    }
  } catch {
    // not JSON: described below
  }
  body ??= {
    error: response.status,
    message: `${response.statusText || 'error'}${text ? `: ${text.slice(0, 200)}` : ''}`,
  };
  return new PlantStoreError(response.status, body, response.headers);
}
