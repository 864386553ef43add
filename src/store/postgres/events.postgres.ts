/**
 * The webhook event of a plant write: one row, whatever the number of
 * endpoints, when the row's owner has an active endpoint subscribed to it;
 * inserted by the same statement as the write (so in its transaction) and only
 * for the rows `changed` (a CTE of the write) returns. Claims fan it out to the
 * endpoints later. The other arguments are SQL expressions over `changed` or
 * the statement's parameters.
 */
export const recordEvent = (
  type: string,
  changed: string,
  owner: string,
  plantId: string,
  name: string,
  tag: string,
) => `
    INSERT INTO webhook_events (event_id, owner, type, plant_id, name, tag)
    SELECT 'ev_' || replace(gen_random_uuid()::text, '-', ''), ${owner}, '${type}', ${plantId}, ${name}, ${tag}
    FROM ${changed}
    WHERE EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.owner = ${owner}
      AND e.disabled_at IS NULL AND '${type}' = ANY (string_to_array(e.events, ' ')))`;
