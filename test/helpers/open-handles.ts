// Whether this process still holds a file open: how a test sees that a store
// it no longer has a handle to was closed after a failure.
import { readdirSync, readlinkSync } from 'node:fs';

/** How many file descriptors of this process are open on `path` (Linux: read from /proc/self/fd). */
export function openHandles(path: string): number {
  let count = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`) === path) count++;
    } catch {
      // closed between the listing and the look
    }
  }
  return count;
}
