import type { FastifyInstance } from 'fastify';
import { buildAdminApp, type AdminOptions } from '../app/admin.js';

/** Builds the admin app and listens on `port` (0: a free one), logging where. */
export async function startAdmin(host: string, port: number, options: AdminOptions): Promise<FastifyInstance> {
  const app = await buildAdminApp(options);
  try {
    await app.listen({
      host,
      port,
      listenTextResolver: (address) => `Admin listener (/metrics, /healthz, /readyz) at ${address}`,
    });
  } catch (error) {
    await app.close().catch(() => {});
    throw error;
  }
  return app;
}
