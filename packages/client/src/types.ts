// The wire shapes the client reads. They are written out here, not imported
// from the server's schemas, so that this package needs nothing at run time
// or at type-check time; the server's tests check that they match.

/** A plant as Plant Store returns it: its name and tag, never its id. */
export interface Plant {
  /** 1 to 256 characters. */
  name: string;
  /** At most 256 characters; absent when the plant has none. */
  tag?: string;
}

/** The body of every non-2xx answer. */
export interface ErrorBody {
  /** The HTTP status of the answer. */
  error: number;
  /** What went wrong, in words meant for a person. */
  message: string;
}
