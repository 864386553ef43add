// Every code example in README.md and docs/ is checked: TypeScript is
// type-checked under strict settings and, when it uses the client, run
// against a real server; JavaScript and shell are parsed (node --check, bash);
// JSON is parsed; TOML is read as a configuration file; Prometheus files go
// through promtool. A block in another language fails
// here until a check is added for it.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app/app.js';
import { runCliInProcess } from '../helpers/cli.js';
import { issueToken } from '../../src/auth/tokens.js';
import { parseConfigFile } from '../../src/config.js';
import { codeBlocks, docPages, REPO, shortName, type CodeBlock } from '../helpers/markdown.js';
import { after, before, commandProbe, describe, it, needs, requirement } from '../helpers/requirements.js';
import { describeOnStore } from '../helpers/stores.js';

const run = promisify(execFile);
const TSC = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const blocks = docPages().flatMap(codeBlocks);
const where = (b: CodeBlock) => `${shortName(b.file)}:${b.line}`;
const of = (...langs: string[]) => blocks.filter((b) => langs.includes(b.lang));

// Untagged and `text` blocks are output shown to the reader (a log line, an HTTP answer,
// a command's --help, which docs/generated-references-current.test.ts checks against the code), not code to run.
const CHECKED = ['ts', 'js', 'sh', 'json', 'yaml', 'sql', 'toml', 'text', ''];

it('every code block has a language this file checks', () => {
  const unknown = blocks.filter((b) => !CHECKED.includes(b.lang)).map((b) => `${where(b)} (${b.lang})`);
  assert.deepEqual(unknown, []);
  assert.ok(of('ts').length >= 2 && of('sh').length >= 20, 'the examples were found');
});

it('shell examples parse, and none runs npx (which could fetch a stranger package from the registry)', async () => {
  for (const b of of('sh')) {
    await run('bash', ['-n', '-c', b.code]).catch((error: { stderr?: string }) => {
      assert.fail(`${where(b)} is not valid shell: ${error.stderr}`);
    });
    assert.doesNotMatch(b.code, /(^|[\s;&|(])npx\s/m, `${where(b)} runs npx`);
  }
});

/** Each `plant-store COMMAND … --flag …` in the shell examples, with the example it is in. */
function cliUses(): Array<{ block: CodeBlock; words: string[]; flags: string[] }> {
  const uses: Array<{ block: CodeBlock; words: string[]; flags: string[] }> = [];
  for (const block of of('sh')) {
    const text = block.code.replace(/\\\n\s*/g, ' ');
    for (const raw of text.split('\n')) {
      const line = raw.replace(/(^|\s)#.*$/, '');
      // At the start of a statement, after $( or a pipe, or as a path: not "docker build -t plant-store".
      for (const m of line.matchAll(/(?:^|\$\(|[;&|]\s*|\/)(?:\w+=\S*\s+)*plant-store((?:\s+[^\s;&|)<>]+)*)/g)) {
        const tokens = m[1]!.trim().split(/\s+/).filter(Boolean);
        const words: string[] = [];
        for (const t of tokens) {
          if (t.startsWith('-') || words.length === 2) break;
          if (!/^[a-z]+$/.test(t)) break;
          words.push(t);
        }
        if (words.length === 0) continue;
        uses.push({ block, words, flags: tokens.filter((t) => /^--[a-z]/.test(t)).map((t) => t.replace(/=.*$/, '')) });
      }
    }
  }
  return uses;
}

it('every plant-store command in the examples exists and takes the flags given', { timeout: 30_000 }, async () => {
  const uses = cliUses();
  assert.ok(uses.length >= 20, `only ${uses.length} commands found`);
  const wrong: string[] = [];
  for (const { block, words, flags } of uses) {
    // "token create" or "migrate": the longest prefix the CLI knows as a command.
    let help: string | undefined;
    for (const n of [words.length, 1]) {
      const result = await runCliInProcess([...words.slice(0, n), '--help']);
      if (result.code === 0 && !/^Usage: plant-store (\w+ )?<command>/.test(result.stdout)) {
        help = result.stdout;
        break;
      }
    }
    if (help === undefined) {
      wrong.push(`${where(block)}: plant-store ${words.join(' ')} is not a command`);
      continue;
    }
    for (const flag of flags) {
      if (!help.includes(flag)) wrong.push(`${where(block)}: plant-store ${words.join(' ')} has no ${flag}`);
    }
  }
  assert.deepEqual(wrong, []);
});

it('webhook URLs in the examples reach nobody: loopback, or a reserved .invalid name', () => {
  const urls = of('sh').flatMap((b) =>
    [...b.code.matchAll(/webhook add\b[^\n]*?--url[ =](\S+)/g)].map((m) => ({ b, url: new URL(m[1]!) })),
  );
  assert.ok(urls.length >= 3, `only ${urls.length} webhook URLs found`);
  const reachable = urls
    .filter(
      ({ url }) => !['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname) && !url.hostname.endsWith('.invalid'),
    )
    .map(({ b, url }) => `${where(b)}: ${url.href}`);
  assert.deepEqual(reachable, []);
});

it('JSON examples parse', () => {
  for (const b of of('json')) assert.doesNotThrow(() => JSON.parse(b.code), `${where(b)} is not JSON`);
});

it('JavaScript examples parse', async () => {
  const dir = join(REPO, 'dist', 'doc-examples', 'js');
  mkdirSync(dir, { recursive: true });
  try {
    for (const [i, b] of of('js').entries()) {
      const file = join(dir, `example-${i}.mjs`);
      writeFileSync(file, b.code);
      await run(process.execPath, ['--check', file]).catch((error: { stderr?: string }) =>
        assert.fail(`${where(b)} is not valid JavaScript: ${error.stderr}`),
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

it('TOML examples are configuration files that --config reads', () => {
  assert.ok(of('toml').length >= 1, 'the configuration reference shows a TOML file');
  for (const b of of('toml')) assert.doesNotThrow(() => parseConfigFile('example.toml', b.code), where(b));
});

it('SQL examples are single statements ending in a semicolon', () => {
  for (const b of of('sql')) {
    for (const line of b.code.split('\n').filter((l) => l.trim() && !l.trim().startsWith('--'))) {
      assert.match(line.replace(/\s*--.*$/, ''), /^[A-Z]+ .*;$/, `${where(b)}: ${line}`);
    }
  }
});

const promtool = await requirement('promtool', commandProbe('promtool'));
needs(promtool, () => {
  describe('Prometheus examples', () => {
    const dir = join(REPO, 'dist', 'doc-examples', 'prometheus');
    before(() => mkdirSync(dir, { recursive: true }));
    after(() => rmSync(dir, { recursive: true, force: true }));

    it('scrape configs and alerting rules pass promtool', { timeout: 30_000 }, async () => {
      const yaml = of('yaml');
      assert.ok(yaml.length >= 2, 'a scrape config and a rules file');
      for (const [i, b] of yaml.entries()) {
        const file = join(dir, `example-${i}.yml`);
        writeFileSync(file, b.code);
        const kind = b.code.includes('scrape_configs:') ? 'config' : 'rules';
        await run('promtool', ['check', kind, file]).catch((error: { stdout?: string; stderr?: string }) => {
          assert.fail(`${where(b)} fails promtool check ${kind}: ${error.stdout}${error.stderr}`);
        });
      }
    });

    it('the 5xx alert fires on 500s, not on 501s, which any client can cause', { timeout: 30_000 }, async () => {
      const rules = of('yaml').find((b) => b.code.includes('alert: PlantStoreErrors'));
      assert.ok(rules, 'the alerting rules name PlantStoreErrors');
      writeFileSync(join(dir, 'rules.yml'), rules.code);
      const series = (status: string, values: string) =>
        `      - series: 'plant_store_http_request_duration_seconds_count{method="POST",route="/plants",status_code="${status}"}'\n` +
        `        values: '${values}'\n`;
      // Ten 501s a second for 20 minutes; ten 500s a second from minute 11 on.
      const test =
        'rule_files: [rules.yml]\ntests:\n  - interval: 1m\n    input_series:\n' +
        series('501', '0+600x20') +
        series('500', '0x10 600+600x9') +
        '    alert_rule_test:\n' +
        '      - eval_time: 10m\n        alertname: PlantStoreErrors\n        exp_alerts: []\n' +
        '      - eval_time: 20m\n        alertname: PlantStoreErrors\n        exp_alerts:\n' +
        '          - exp_labels: { severity: page }\n' +
        '            exp_annotations: { summary: Plant Store answers more than one request in ten seconds with a 5xx }\n';
      writeFileSync(join(dir, 'rules.test.yml'), test);
      await run('promtool', ['test', 'rules', join(dir, 'rules.test.yml')]).catch(
        (error: { stdout?: string; stderr?: string }) =>
          assert.fail(`${where(rules)}: PlantStoreErrors: ${error.stdout}${error.stderr}`),
      );
    });
  });
});

describeOnStore('sqlite', 'TypeScript examples', (fx) => {
  // Inside the repository, so that imports resolve as in a project that installed the packages.
  const dir = join(REPO, 'dist', 'doc-examples', 'ts');
  const examples = of('ts').map((b, i) => ({ block: b, name: `example-${i}` }));
  let app: FastifyInstance;
  let baseUrl = '';
  let token = '';

  before(async () => {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    const store = await fx.open();
    app = await buildApp(fx.config(), { store });
    baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
    token = (await issueToken(store.tokens, { owner: 'doc-examples' })).token;
  });
  after(async () => {
    await app?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('type-check under strict settings', { timeout: 60_000 }, async () => {
    for (const { block, name } of examples) writeFileSync(join(dir, `${name}.ts`), block.code);
    const compilerOptions = {
      strict: true,
      exactOptionalPropertyTypes: true,
      noUncheckedIndexedAccess: true,
      target: 'ES2022',
      lib: ['ES2022', 'DOM'],
      module: 'NodeNext',
      moduleResolution: 'NodeNext',
      types: ['node'],
      skipLibCheck: true,
      noEmitOnError: true,
    };
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module', private: true }));
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({ compilerOptions, files: examples.map((e) => `${e.name}.ts`) }),
    );
    await run(process.execPath, [TSC, '-p', 'tsconfig.json'], { cwd: dir }).catch((error: { stdout?: string }) => {
      const out = examples.reduce((text, e) => text.replaceAll(`${e.name}.ts`, where(e.block)), error.stdout ?? '');
      assert.fail(`the examples do not compile:\n${out}`);
    });
  });

  it('the client examples run against a server and print what their comments say', { timeout: 60_000 }, async () => {
    // A live stream (watchPlants) runs until it is stopped: such an example is type-checked, not run.
    const clientExamples = examples.filter(
      (e) => e.block.code.includes("from 'plant-store-client'") && !e.block.code.includes('watchPlants'),
    );
    assert.ok(clientExamples.length >= 1);
    for (const { block, name } of clientExamples) {
      const { stdout } = await run(process.execPath, [`${name}.js`], {
        cwd: dir,
        env: { ...process.env, TOKEN: token, PLANT_STORE_URL: baseUrl },
        timeout: 30_000,
      });
      // A comment such as `// 404 no plant with id 9223372036854775807` after the last console.log is its output.
      const said = [...block.code.matchAll(/console\.log\([^\n]*\); \/\/ (\d{3} .+)$/gm)].map((m) => m[1]!);
      const lines = stdout.trim().split('\n');
      for (const line of said) assert.ok(lines.includes(line), `${where(block)} should print "${line}":\n${stdout}`);
    }
  });
});
