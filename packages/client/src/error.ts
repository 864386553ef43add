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

/** Why a live stream's credentials ended: revoked, expired (a token's expiry or a JWT's exp), or the read scope lost. */
export type CredentialsEndReason = 'revoked' | 'expired' | 'scope';

/**
 * Thrown by watchPlants when the server ends the stream because its
 * credentials ended (the stream's last event was `unauthorized`). Reconnecting
 * with the same token would be refused, so it stops instead; `status` is what
 * a new request with them would get (401, or 403 for the scope).
 */
export class CredentialsEndedError extends PlantStoreError {
  override name = 'CredentialsEndedError';

  constructor(
    readonly reason: CredentialsEndReason,
    message: string,
  ) {
    const status = reason === 'scope' ? 403 : 401;
    super(status, { error: status, message }, new Headers());
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
