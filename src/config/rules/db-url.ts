import { SSL_MODES, postgresSslMode, sslFiles, withoutPassword } from '../../db-url.js';
import { readOperatorFile } from '../operator-file.js';
import { ConfigError } from '../schema.js';
import type { Rule } from '../rule.js';

export function isPostgresUrl(db: string): boolean {
  return /^postgres(ql)?:\/\//i.test(db);
}

const SUPPORTED_DB_FORMS =
  'give a SQLite file path (such as ./data/plants.db) or a postgres://user:password@host:5432/database URL (postgresql:// works too)';

/**
 * Why --db cannot be used, or undefined. Anything that looks like a URL must
 * be a PostgreSQL one: otherwise a typo (postgres:/host/db, postgresql//host)
 * or another database's URL (mysql://) would silently become a new SQLite
 * file while the operator believes the service runs on their database.
 */
export function checkDb(db: string): string | undefined {
  if (isPostgresUrl(db)) {
    try {
      new URL(db);
    } catch {
      return `is not a valid PostgreSQL URL ("${withoutPassword(db)}"); ${SUPPORTED_DB_FORMS}`;
    }
    const sslmode = postgresSslMode(db);
    if (sslmode !== undefined && !SSL_MODES.includes(sslmode)) {
      return `has sslmode=${JSON.stringify(sslmode.slice(0, 40))}, which is not an SSL mode; use one of ${SSL_MODES.slice(0, -1).join(', ')} or ${SSL_MODES.at(-1)!}`;
    }
    return undefined;
  }
  // A scheme of two letters or more ("C:" is a Windows drive), or postgres
  // followed by the wrong punctuation.
  const scheme = /^([a-z][a-z0-9+.-]+):/i.exec(db)?.[1];
  if (scheme !== undefined || db.includes('://') || /^postgres(ql)?(:|\/\/)/i.test(db)) {
    const what = scheme && !/^postgres(ql)?$/i.test(scheme) ? `a ${scheme}: URL` : 'a malformed PostgreSQL URL';
    return `looks like ${what} ("${withoutPassword(db)}"), which is not supported; ${SUPPORTED_DB_FORMS}`;
  }
  return undefined;
}

/**
 * --db is a SQLite path or a PostgreSQL URL, whether given itself or read
 * from --db-file; the TLS files its query names are files of a setting too,
 * held to the same bounds before pg reads them.
 */
export const dbUrlRule: Rule = {
  about: 'the form of --db, and the TLS files it names',
  check(config, { label }) {
    const where = config.dbFile === undefined ? label('db') : `the URL in ${config.dbFile} (${label('dbFile')})`;
    const problem = checkDb(config.db);
    if (problem !== undefined) throw new ConfigError(`${where} ${problem}`);
    if (!isPostgresUrl(config.db)) return;
    for (const { name, path } of sslFiles(config.db)) readOperatorFile(path, `${name} in ${where}`);
  },
};
