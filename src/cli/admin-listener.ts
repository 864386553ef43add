import type { FastifyInstance } from 'fastify';
import { buildAdminApp, type AdminOptions } from '../app/admin.js';
import type { AdminApiOptions } from '../app/admin-api.js';
import type { Config } from '../config.js';
import type { Store } from '../store/store.js';

/** The admin API's options when --admin-token-file is set; undefined (no such routes) otherwise. */
export function adminApi(config: Readonly<Config>, store: Store): AdminApiOptions | undefined {
  return config.adminToken === undefined ? undefined : { secret: config.adminToken, store, settings: config };
}

/** Builds the admin app and listens on `port` (0: a free one), logging where. */
export async function startAdmin(host: string, port: number, options: AdminOptions): Promise<FastifyInstance> {
  const app = await buildAdminApp(options);
  try {
    await app.listen({
      host,
      port,
      listenTextResolver: (address) =>
        `Admin listener (/metrics, /healthz, /readyz${options.api ? ', the admin API under /admin/' : ''}) at ${address}`,
    });
  } catch (error) {
    await app.close().catch(() => {});
    throw error;
  }
  return app;
}
