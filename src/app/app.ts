import { randomBytes } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyRequest, type onRequestHookHandler } from 'fastify';
import type { DestinationStream } from 'pino';
import { bearerAuth } from '../auth/bearer.js';
import { TokenCache } from '../auth/token-cache.js';
import { argvPasswordWarning, jwtEnabled, trustedProxies, type Config } from '../config.js';
import { clientAddress, trustProxy } from '../http/client-address.js';
import { docsRoutes } from '../routes/docs.js';
import { enableMetrics } from '../metrics/metrics.js';
import { countingClientErrors, recordHttpMetrics, recordingFrameworkErrors } from '../plugins/metrics.js';
import { registerRateLimits } from '../plugins/rate-limit.js';
import { healthRoutes } from '../routes/health.js';
import { registerCors } from '../plugins/cors.js';
import { openapiRoute } from '../routes/openapi.js';
import { EventFeed } from '../routes/event-feed.js';
import { eventRoutes } from '../routes/plant-events.js';
import { StreamCredentials } from '../routes/stream-credentials.js';
import { plantRoutes } from '../routes/plants.js';
import { rootRoute } from '../routes/root.js';
import type { EventSignal, Store } from '../store/store.js';
import { clientErrorHandler, frameworkErrors, registerErrorHandling, sendError } from './error-handler.js';
import { SECURITY_HEADERS, headerCount } from '../http/headers.js';
import { looksLikeSecret } from '../http/log-lines.js';
import { errors } from '../http/errors.js';
import { guardConnections, serverTimeouts } from './connection-limits.js';
import { registerJsonBodyParser } from './json-body.js';
import { checkRequestFraming, refuseConnect, requestLineProblem } from './request-framing.js';
import { registerOpenApi } from './openapi.js';
import { closeLogger, createLogger, logsEveryRequest, requestLog } from './logger.js';
import { trackMethods } from './method-not-allowed.js';
import { validatorCompiler } from './validation.js';
import { traceRequests } from './request-spans.js';
import { tracing } from '../tracing/tracing.js';
import { logTracingProblems } from './tracing-problems.js';

// An incoming X-Request-Id is kept only when the operator says a proxy sets
// it (--trust-request-id), and even then not when it looks like a
// credential: a client or a proxy may have put a secret there by mistake.
const REQUEST_ID = /^[A-Za-z0-9._:@-]{1,128}$/;
/** The request id to use: the caller's X-Request-Id when it is safe to repeat, else a new one. */
function requestId(incoming: string | string[] | undefined): string {
  return typeof incoming === 'string' && REQUEST_ID.test(incoming) && !looksLikeSecret(incoming)
    ? incoming
    : nextRequestId();
}

// Unique without a random UUID per request: a random prefix per process and a counter.
const REQUEST_ID_PREFIX = randomBytes(6).toString('base64url');
let requestCounter = 0;
const nextRequestId = () => `${REQUEST_ID_PREFIX}-${(++requestCounter).toString(36)}`;

/**
 * A path no route serves is answered 404 only to a caller with a valid token
 * (any scope), and 401 otherwise, like the API's own paths: an unknown path
 * tells a stranger nothing. Either way from onRequest, before any body is read.
 */
function tokenFirst(guard: onRequestHookHandler): onRequestHookHandler {
  return function unknownPath(request, reply, done) {
    const path = request.url.split('?')[0]!.slice(0, 200);
    guard.call(this, request, reply, (error) =>
      done(error ?? errors.notFound(`no route for ${request.method} ${path}`)),
    );
  };
}

export interface AppOptions {
  /** An open store; the caller opens it and closes it after the app. */
  store: Store;
  /** Where log lines go instead of stdout (fd 1). */
  logStream?: DestinationStream | undefined;
  /**
   * How this process and the others serving the same store tell each other
   * of new events (with --workers, the cluster's channel); the store's own
   * when not given. The caller closes it.
   */
  eventSignal?: EventSignal | undefined;
}

/** Whether the server is shutting down, and the requests refused for it. */
interface Shutdown {
  closing: boolean;
  // Requests refused because the server is closing: expected in a planned
  // shutdown, so they are counted into one line instead of logged one by one.
  readonly refused: WeakSet<object>;
  refusedCount: number;
}

/**
 * The whole service as an unlistened Fastify instance. When a step fails, what
 * the steps before it started (the JWKS refresh, a Redis connection, the live
 * event feed's timers) is stopped again before the error is thrown.
 */
export async function buildApp(
  config: Readonly<Config>,
  { store, logStream, eventSignal = store.eventSignal }: AppOptions,
): Promise<FastifyInstance> {
  // Metrics are recorded only when something can read them: the admin listener.
  const metrics = config.adminPort !== null;
  if (metrics) enableMetrics();
  const shutdown: Shutdown = { closing: false, refused: new WeakSet(), refusedCount: 0 };
  const logger = createLogger(config, logStream);
  const app = Fastify({
    loggerInstance: logger,
    logController: requestLog(config, logger, (request) => shutdown.closing && shutdown.refused.has(request)),
    bodyLimit: config.bodyLimit,
    ...serverTimeouts(config),
    genReqId: config.trustRequestId ? (req) => requestId(req.headers['x-request-id']) : nextRequestId,
    requestIdHeader: false,
    // Fastify's own 503 while closing has a body of another shape; ours is below.
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: 200 },
    frameworkErrors: metrics ? recordingFrameworkErrors(frameworkErrors) : frameworkErrors,
    clientErrorHandler: metrics ? countingClientErrors(clientErrorHandler) : clientErrorHandler,
    // A pino child logger per request costs more than the rest of a list
    // request's own work; request lines carry the request id instead.
    childLoggerFactory: (logger) => logger,
  });
  try {
    await assemble(app, config, { store, eventSignal }, shutdown, metrics);
  } catch (error) {
    // Each thing started is stopped by an onClose hook added with it; close()
    // runs them whether or not the app got as far as ready().
    await app.close().catch(() => {});
    throw error;
  }
  return app;
}

/** Everything but the Fastify instance itself: hooks, plugins, routes. */
async function assemble(
  app: FastifyInstance,
  config: Readonly<Config>,
  { store, eventSignal }: { store: Store; eventSignal: EventSignal | undefined },
  shutdown: Shutdown,
  metrics: boolean,
): Promise<void> {
  // Before every other hook: the request's span covers all it goes through.
  const traces = tracing();
  if (traces) {
    traceRequests(app, traces);
    logTracingProblems(app.log, traces, config);
  }
  app.addHook('onClose', async () => closeLogger(app.log));
  if (config.passwordsInArgv?.length) app.log.warn(argvPasswordWarning(config.passwordsInArgv));
  const connections = guardConnections(app.server, config, app.log);

  const trust = trustProxy(trustedProxies(config.trustProxy));
  app.decorateRequest('client', {
    getter(this: FastifyRequest) {
      return clientAddress(this.raw, trust);
    },
  });
  app.setValidatorCompiler(validatorCompiler);
  registerJsonBodyParser(app, config.bodyLimit, config.maxBatch);
  registerErrorHandling(app, config.bodyLimit, logsEveryRequest(config));

  app.addHook('onClose', (_instance, done) => {
    const { refusedCount } = shutdown;
    if (refusedCount > 0)
      app.log.info({ refused: refusedCount }, `refused ${refusedCount} requests while shutting down`);
    done();
  });
  app.addHook('preClose', (done) => {
    shutdown.closing = true;
    // Keep-alive connections would otherwise hold the server open: close each
    // one as soon as its in-flight request has been answered (which says
    // Connection: close), and those that never sent one at once.
    const reapNow = () => {
      connections.closeIdle();
      connections.closeUnused();
      connections.closeAfterAnswers();
    };
    reapNow();
    const reap = setInterval(reapNow, 50);
    app.server.once('close', () => clearInterval(reap));
    done();
  });
  // jose is loaded only where JWTs are accepted.
  const jwt = jwtEnabled(config) ? new (await import('../auth/jwt.js')).JwtVerifier(config, app.log) : undefined;
  if (jwt) {
    jwt.start();
    app.addHook('onClose', async () => jwt.close());
  }
  const authenticate = bearerAuth(new TokenCache(store.tokens, config.tokenCacheMs), jwt);
  const unknownPath = tokenFirst(authenticate(null));
  app.addHook('onRequest', function everyRequest(request, reply, done) {
    reply.headers(SECURITY_HEADERS).header('x-request-id', request.id);
    const refused = requestLineProblem(request.raw);
    if (refused !== undefined) {
      reply.header('connection', 'close');
      return done(refused);
    }
    // Node would refuse this itself, before any hook, with a bare 400 (see serverTimeouts).
    if (request.headers.host === undefined && request.raw.httpVersion === '1.1') {
      reply.header('connection', 'close');
      return done(errors.badRequest('the Host header is missing: HTTP/1.1 requests must send one'));
    }
    // RFC 9112 3.2: a request with more than one Host is refused; Node keeps the first, a proxy may use another.
    if (headerCount(request.raw.rawHeaders, 'host') > 1) {
      reply.header('connection', 'close');
      return done(errors.badRequest('more than one Host header'));
    }
    if (shutdown.closing) {
      shutdown.refused.add(request);
      shutdown.refusedCount++;
      sendError(reply.header('connection', 'close'), errors.unavailable('the server is shutting down, try again'));
      return;
    }
    if (request.is404) return unknownPath.call(this, request, reply, done);
    done();
  });
  checkRequestFraming(app, config.bodyLimit);
  // Answered on the socket, as a request the parser refuses is, and counted with those.
  app.server.on('connect', metrics ? countingClientErrors(refuseConnect) : refuseConnect);
  // Both hook into every route as it is declared, so they come before the routes.
  if (metrics) recordHttpMetrics(app);
  await registerRateLimits(app, config);

  await registerOpenApi(app);

  // Before trackMethods: the plugin's catch-all OPTIONS route must not earn every path a 405 route.
  if (config.corsOrigin !== 'off') await registerCors(app, { origin: config.corsOrigin });
  const addMethodNotAllowed = trackMethods(app);
  app.decorateRequest('principal', null as never);
  const feed = new EventFeed(
    store.events,
    {
      pollMs: config.eventsPollMs,
      keepaliveMs: config.eventsKeepaliveMs,
      bufferBytes: config.eventsBufferBytes,
      slowMs: config.eventsSlowMs,
      maxStreams: config.eventsMaxStreams,
      maxStreamsPerOwner: config.eventsMaxStreamsPerOwner,
      retentionMs: config.eventsRetentionMs,
      maxKept: config.eventsMaxKept,
    },
    app.log,
    new StreamCredentials(store.tokens, 'plants:read', app.log),
    eventSignal,
  );
  // Its timers run from now on: stopped, and its streams ended, as closing
  // begins (so that open streams do not hold the server open), also when a
  // later step of the build fails.
  eventSignal?.start();
  app.addHook('preClose', (done) => {
    feed.close();
    done();
  });
  await app.register(plantRoutes, {
    plants: store.plants,
    listDefaultLimit: config.listDefaultLimit,
    listMaxLimit: config.listMaxLimit,
    authenticate,
    // Streams here look at once; those of the other processes once the word reaches them.
    changed: () => {
      feed.wake();
      eventSignal?.announce();
    },
    maxBatch: config.maxBatch,
    maxPlantsPerOwner: config.maxPlantsPerOwner,
  });
  await app.register(eventRoutes, { feed, authenticate });
  await app.register(healthRoutes, { store, jwks: jwt });
  await app.register(openapiRoute);
  await app.register(docsRoutes);
  await app.register(rootRoute);
  addMethodNotAllowed(authenticate);
}
