import { Type, type Static } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import Negotiator from 'negotiator';
import type { Authenticate } from '../auth/bearer.js';
import { errors } from '../http/errors.js';
import { markLongLived } from '../http/long-lived.js';
import { INT64_MAX, parseInt64Text } from '../schemas/int64.js';
import { NoQuery } from '../schemas/plant.js';
import { errorResponses } from '../schemas/responses.js';
import type { EventFeed } from './event-feed.js';

export interface EventRoutesOptions {
  feed: EventFeed;
  authenticate: Authenticate;
}

const EventHeaders = Type.Object({
  'last-event-id': Type.Optional(
    Type.String({
      description:
        'Resume after this event: the id of the last event received, in decimal (browsers send it by themselves)',
    }),
  ),
});
type EventHeaders = Static<typeof EventHeaders>;

/** What the stream is sent as, and what a request's Accept must admit. */
const STREAM_TYPE = 'text/event-stream; charset=utf-8';

const STREAM_DESCRIPTION = `A stream of Server-Sent Events, one per change of the caller's plants, in the order the changes committed; event ids increase but are not consecutive:

    id: <event id>
    event: plant.created
    data: {"type":"plant.created","timestamp":"…","data":{"id":…,"name":"…","tag":"…"}}

\`data\` is the webhook payload (PlantCreatedEvent or PlantDeletedEvent). Lines starting with \`:\` are keep-alive comments. Three other events may come: \`reset\` (the Last-Event-ID sent is no longer kept: list the plants again; its id is where the stream goes on from), \`overflow\` (the client read too slowly and the stream ends: reconnect with Last-Event-ID) and \`unauthorized\`, the last event of a stream whose credentials ended, sent within a second of it:

    event: unauthorized
    data: {"type":"unauthorized","reason":"revoked","message":"…"}

\`reason\` is \`revoked\` (the token was revoked), \`expired\` (the token's expiry or the JWT's exp passed) or \`scope\` (the token no longer has plants:read). Do not reconnect with the same credentials: they would be refused with 401 or 403.`;

const BAD_LAST_EVENT_ID = 'Last-Event-ID must be an event id received from this stream';

export const eventRoutes: FastifyPluginAsync<EventRoutesOptions> = async (app, { feed, authenticate }) => {
  app.get<{ Headers: EventHeaders }>(
    '/plants/events',
    {
      onRequest: authenticate('plants:read'),
      schema: {
        operationId: 'watchPlants',
        summary: "Follow changes of the caller's plants",
        description:
          "Keeps the response open and sends an event for every create and delete of the caller's plants (not for replays, conflicts, deletes answered 404 or imports). Send Last-Event-ID to get exactly the events after that one, then the live ones. Events are kept for a limited time (24 hours unless configured); an id older than that gets a `reset` event. Needs the plants:read scope.",
        tags: ['plants'],
        security: [{ bearerAuth: [] }],
        headers: EventHeaders,
        querystring: NoQuery,
        response: {
          200: {
            description: STREAM_DESCRIPTION,
            content: { 'text/event-stream': { schema: { type: 'string' } } },
          },
          ...errorResponses([400, BAD_LAST_EVENT_ID], 401, 403, 406, 429, 500, 503),
        },
      },
    },
    async (request, reply) => {
      // No Accept at all admits anything (RFC 9110 12.5.1); q-values and ranges are read as negotiator reads them.
      const accept = request.headers.accept;
      if (accept !== undefined && new Negotiator(request.raw).mediaType([STREAM_TYPE]) === undefined)
        throw errors.notAcceptable(
          `this is a Server-Sent Events stream: send Accept: text/event-stream (the Accept header sent, "${accept.slice(0, 100)}", does not admit it)`,
        );
      const raw = request.headers['last-event-id'];
      const lastEventId = raw === undefined ? undefined : parseInt64Text(raw);
      if (raw !== undefined && (lastEventId === undefined || lastEventId < 0n || lastEventId > INT64_MAX))
        throw errors.badRequest(BAD_LAST_EVENT_ID);
      // HEAD gets the stream's headers and no stream: it would never end, and would hold one of the owner's streams.
      if (request.method === 'HEAD') return reply.type(STREAM_TYPE).send();
      const res = reply.raw;
      await feed.start(request.principal, res, lastEventId, () => {
        markLongLived(res);
        reply.hijack();
        for (const [name, value] of Object.entries(reply.getHeaders()))
          if (value !== undefined) res.setHeader(name, value);
        res.writeHead(200, {
          'content-type': STREAM_TYPE,
          'cache-control': 'no-store',
          // Tells nginx not to buffer the stream.
          'x-accel-buffering': 'no',
        });
        // Tells EventSource clients how soon to reconnect.
        res.write('retry: 1000\n\n');
        // A client that goes away may only half-close its side; Node keeps such
        // a connection open while the response lasts, so end the stream then.
        res.socket?.once('end', () => res.destroy());
      });
    },
  );
};
