/**
 * The outbox rows of a plant write: one per active endpoint of the row's owner
 * that subscribed to the event, inserted by the same statement as the write
 * (so in its transaction) and only for the rows `changed` (a CTE of the
 * write) returns. The other arguments are SQL expressions over `changed` or
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
    INSERT INTO webhook_deliveries (event_id, endpoint_id, owner, type, plant_id, name, tag)
    SELECT 'msg_' || replace(gen_random_uuid()::text, '-', ''), e.id, ${owner}, '${type}', ${plantId}, ${name}, ${tag}
    FROM ${changed} JOIN webhook_endpoints e ON e.owner = ${owner}
    WHERE e.disabled_at IS NULL AND '${type}' = ANY (string_to_array(e.events, ' '))`;
