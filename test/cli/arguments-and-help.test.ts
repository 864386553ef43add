// How the command line talks: one style for every argument error, the nearest
// command or option for a typo, serve --help by topic within 100 columns, and
// --config FILE (or PLANTS_CONFIG) under the flags and the environment.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from '../helpers/requirements.js';
import { runCliInProcess as runCli } from '../helpers/cli.js';
import { SETTINGS } from '../../src/config.js';

const dir = mkdtempSync(join(tmpdir(), 'plant-store-cli-args-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const T = { timeout: 20_000 };

describe('argument errors', () => {
  const cases: [string[], Record<string, string>, RegExp][] = [
    [['serve', '--prot', '1'], {}, /^plant-store serve: unknown option --prot \(did you mean --port\?\)\n/],
    // A one-letter option means what it means to most tools, not the name nearest to one letter ("db").
    [['serve', '-p', '8080'], {}, /^plant-store serve: unknown option -p \(did you mean --port\?\)\n/],
    [['serve', '-d', 'x.db'], {}, /^plant-store serve: unknown option -d \(did you mean --db\?\)\n/],
    [['token', 'create', '-o', 'me'], {}, /^plant-store token create: unknown option -o \(did you mean --owner\?\)\n/],
    [['token', 'list', '-p', '1'], {}, /^plant-store token list: unknown option -p\n/],
    [['token', 'list', '-q'], {}, /^plant-store token list: unknown option -q\n/],
    [['serve', '--port'], {}, /^plant-store serve: --port needs a value\n/],
    [['serve', '--access-log=yes'], {}, /^plant-store serve: --access-log takes no value\n/],
    [
      ['serve', '--port', '70000'],
      {},
      /^plant-store serve: --port must be a whole number from 0 to 65535, got 70000\n$/,
    ],
    [['serve', '--admin-port', '-1'], {}, /^plant-store serve: --admin-port needs a value; to give one that starts/],
    [['serve'], { PLANTS_BODY_LIMIT: '1' }, /^plant-store serve: PLANTS_BODY_LIMIT must be a whole number from 64 to /],
    [['token', 'create'], {}, /^plant-store token create: --owner is required\n$/],
    [['token', 'create', '--owner', 'a', '--scope', 'x'], {}, /^plant-store token create: --scope must be one of/],
    [['migrate', 'extra'], {}, /^plant-store migrate: unexpected argument "extra"\n/],
    [['serv'], {}, /^plant-store: unknown command "serv" \(did you mean "serve"\?\)\n/],
    [['token', 'creat'], {}, /^plant-store token: unknown command "token creat" \(did you mean "token create"\?\)\n/],
    [
      ['migrate', '--config', join(dir, 'none.toml')],
      {},
      /^plant-store migrate: --config: cannot read .*none.toml \(no such file\)\n$/,
    ],
  ];
  for (const [args, env, message] of cases) {
    it(`${args.join(' ')} ${Object.keys(env).join(' ')}`, T, async () => {
      const r = await runCli(args, env);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, message);
      assert.equal(r.stdout, '');
    });
  }

  it('a word nothing like a command gets no suggestion', T, async () => {
    const r = await runCli(['frobnicate']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^plant-store: unknown command "frobnicate"\n/);
  });
});

describe('serve --help', () => {
  it('lists every setting once, by topic, with a typed placeholder, within 100 columns', T, async () => {
    const r = await runCli(['serve', '--help']);
    assert.equal(r.code, 0);
    const lines = r.stdout.split('\n');
    for (const line of lines) assert.ok(line.length <= 100, `${line.length} columns: ${line}`);
    const headings = lines.filter((l) => /^[A-Z][a-z]+:$/.test(l));
    assert.deepEqual(headings, [
      'Network:',
      'Storage:',
      'Auth:',
      'Webhooks:',
      'Events:',
      'Limits:',
      'Observability:',
      'Tracing:',
      'Common:',
    ]);
    for (const [name, s] of Object.entries(SETTINGS)) {
      const flagLines = lines.filter((l) => l.startsWith(`  --${name} `) || l === `  --${name}`);
      assert.equal(flagLines.length, 1, `--${name} once`);
      if (s.arg !== '') assert.ok(flagLines[0]!.startsWith(`  --${name} ${s.arg}`), flagLines[0]);
    }
    for (const placeholder of ['N', 'BYTES', 'MS', 'URL']) assert.match(r.stdout, new RegExp(` ${placeholder}\\b`));
  });

  it('list-valued options have one syntax, NAME[,NAME...], in every command', T, async () => {
    for (const [command, flag] of [
      [['serve'], '--cors-origin ORIGIN[,ORIGIN...]'],
      [['token', 'create'], '--scope SCOPE[,SCOPE...]'],
      [['webhook', 'add'], '--events TYPE[,TYPE...]'],
    ] as const) {
      const help = (await runCli([...command, '--help'])).stdout;
      assert.ok(help.includes(`  ${flag}`), `${command.join(' ')}: ${flag}`);
      assert.doesNotMatch(help, /repeatable/);
    }
  });
});

describe('--config FILE', () => {
  it('gives settings under the flags and the environment, by flag or PLANTS_CONFIG', T, async () => {
    const fromFile = join(dir, 'from-file.db');
    const toml = join(dir, 'plants.toml');
    writeFileSync(toml, `db = "${fromFile}"\nport = 9999\n`);
    assert.equal((await runCli(['migrate', '--config', toml])).code, 0);
    assert.ok(existsSync(fromFile), 'the file named the store');

    const fromEnv = join(dir, 'from-env.db');
    const r = await runCli(['migrate', '--config', toml], { PLANTS_DB: fromEnv });
    assert.equal(r.code, 0, r.stderr);
    assert.ok(existsSync(fromEnv), 'PLANTS_DB wins over the file');

    const json = join(dir, 'plants.json');
    const viaEnv = join(dir, 'via-plants-config.db');
    writeFileSync(json, JSON.stringify({ db: viaEnv }));
    assert.equal((await runCli(['migrate'], { PLANTS_CONFIG: json })).code, 0);
    assert.ok(existsSync(viaEnv), 'PLANTS_CONFIG names the file');

    const flag = join(dir, 'from-flag.db');
    assert.equal((await runCli(['migrate', '--config', toml, '--db', flag], { PLANTS_DB: fromEnv })).code, 0);
    assert.ok(existsSync(flag), 'the flag wins over both');
  });

  it('a bad value in the file is refused, naming the file', T, async () => {
    const toml = join(dir, 'bad.toml');
    writeFileSync(toml, 'pg-pooler = "sometimes"\n');
    const r = await runCli(['migrate', '--config', toml, '--db', join(dir, 'x.db')]);
    assert.equal(r.code, 2);
    assert.equal(
      r.stderr,
      `plant-store migrate: pg-pooler in ${toml} must be one of none, transaction, got "sometimes"\n`,
    );
  });
});
