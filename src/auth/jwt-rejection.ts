// Apart from jwt.ts, so that the bearer check can tell a refused JWT without loading jose where JWTs are off.
/** A JWT that was refused: `reason` goes to the client (error_description), `detail` only to the log. */
export class JwtRejection extends Error {
  override name = 'JwtRejection';
  constructor(
    readonly reason: string,
    readonly detail: string = reason,
  ) {
    super(reason);
  }
}
