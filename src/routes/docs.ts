import swaggerUi from '@fastify/swagger-ui';
import type { FastifyPluginAsync } from 'fastify';

/**
 * What the reference page may load: its own scripts and styles and data:
 * images from this server, and requests to this server only ("Try it out").
 * Swagger UI needs no inline script or style, no eval and no font. The rest
 * of the API keeps `default-src 'none'`.
 */
export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * GET /docs: Swagger UI, from files in the @fastify/swagger-ui package, over
 * the same document as /openapi.json. Nothing is fetched from elsewhere: no
 * CDN, no web font, no validator badge.
 */
export const docsRoutes: FastifyPluginAsync = async (app) => {
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    staticCSP: DOCS_CSP,
    theme: { title: 'Plant Store API reference' },
    uiConfig: {
      // Without the top bar there is no field that loads a document from another address.
      layout: 'BaseLayout',
      deepLinking: true,
      tryItOutEnabled: true,
      displayRequestDuration: true,
      defaultModelsExpandDepth: 2,
      // The address shown under the title: /openapi.json, where clients and
      // tools get the document (the page itself loads its copy at /docs/json). (These
      // functions run in the browser; uiConfig.plugins replaces the default
      // list, so DownloadUrl, which fetches the document, is named again.)
      plugins: [
        function downloadUrl(system: unknown) {
          return (
            globalThis as unknown as {
              SwaggerUIBundle: { plugins: { DownloadUrl: (s: unknown) => { fn: Record<string, unknown> } } };
            }
          ).SwaggerUIBundle.plugins.DownloadUrl(system);
        },
        function openapiJsonUrl() {
          return { statePlugins: { spec: { wrapSelectors: { url: () => () => '/openapi.json' } } } };
        },
        // The live event stream never ends, so "Execute" would show LOADING
        // for good: in its place, the operation says so and gives the curl
        // line that shows the stream. (Elements only: the page's policy
        // allows no inline style.)
        function streamOperationNote(system: unknown) {
          type Element = unknown;
          const { createElement } = (
            system as { React: { createElement: (type: unknown, props: object, ...children: unknown[]) => Element } }
          ).React;
          return {
            wrapComponents: {
              execute:
                (Original: unknown) =>
                (props: { path?: string; method?: string }): Element => {
                  if (props.path !== '/plants/events' || props.method !== 'get') return createElement(Original, props);
                  const { origin } = (globalThis as unknown as { location: { origin: string } }).location;
                  const url = `${origin}/plants/events`;
                  return createElement(
                    'div',
                    { className: 'plants-stream-note opblock-description-wrapper' },
                    createElement(
                      'p',
                      {},
                      'This page cannot show a stream: the answer never ends, so it would wait for good. ' +
                        'Watch it from a terminal instead (TOKEN is a token with the plants:read scope):',
                    ),
                    createElement(
                      'pre',
                      { className: 'plants-stream-curl' },
                      `curl -N -H "Accept: text/event-stream" -H "Authorization: Bearer $TOKEN" ${url}`,
                    ),
                  );
                },
            },
          };
        },
      ],
    },
    validatorUrl: false,
  });
};
