// Request lines of an odd form, sent on raw sockets: the target `*` with a
// method other than OPTIONS, an HTTP version other than 1.0 and 1.1, and an
// absolute-form target naming a host the Host header does not. Each is
// refused with the JSON error body, whatever the token, and serves nothing.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { issueToken } from '../../src/auth/tokens.js';
import type { Store } from '../../src/store/store.js';
import { listenApp } from '../helpers/app.js';
import { exchange } from '../helpers/raw-socket.js';
import { describeHttpLayer } from '../helpers/stores.js';
import { after, before, it } from '../helpers/requirements.js';

const portOf = (app: FastifyInstance) => (app.server.address() as AddressInfo).port;

describeHttpLayer('odd request lines', (fx) => {
  let store: Store;
  let app: FastifyInstance;
  let port: number;
  let token: string;
  before(async () => {
    ({ app, store } = await listenApp(fx));
    port = portOf(app);
    token = (await issueToken(store.tokens, { owner: 'lines' })).token;
    await app.inject({
      method: 'POST',
      url: '/plants',
      headers: { authorization: `Bearer ${token}` },
      payload: { id: 1, name: 'fern' },
    });
  });
  after(async () => {
    await app?.close();
  });

  /** Sends `line` (then Host, the token and a blank line, or `head` instead) and returns all the server sent. */
  const send = async (line: string, head = `Host: 127.0.0.1:${port}\r\n`) =>
    (
      await exchange(
        port,
        (socket) => socket.write(`${line}\r\n${head}Authorization: Bearer ${token}\r\nConnection: close\r\n\r\n`),
        5000,
      )
    ).data;

  /** The status and the parsed JSON body of a raw answer, checked to be the Error shape. */
  const errorOf = (data: string) => {
    const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(data)?.[1]);
    assert.match(data, /content-type: application\/json/i, data);
    const body = JSON.parse(data.slice(data.indexOf('\r\n\r\n') + 4)) as { error: number; message: string };
    assert.equal(body.error, status, `not an error body: ${data}`);
    assert.equal(typeof body.message, 'string');
    return { status, message: body.message };
  };

  it('refuses the target * with any method but OPTIONS: 400', { timeout: 20_000 }, async () => {
    for (const method of ['GET', 'HEAD', 'POST', 'DELETE', 'PUT']) {
      const data = await send(`${method} * HTTP/1.1`);
      if (method === 'HEAD') {
        assert.match(data, /^HTTP\/1\.1 400 /, data);
        continue;
      }
      const { status, message } = errorOf(data);
      assert.equal(status, 400, data);
      assert.match(message, /target \* is for OPTIONS only, not /);
    }
    const options = await send('OPTIONS * HTTP/1.1');
    assert.doesNotMatch(options, /^HTTP\/1\.1 (400|5\d\d) /, options);
  });

  it('answers 505 to an HTTP version other than 1.0 and 1.1', { timeout: 20_000 }, async () => {
    // 2.0 and 0.9 reach the app; Node's parser refuses the others itself.
    for (const version of ['2.0', '0.9', '1.2', '3.0', '9.9']) {
      const data = await send(`GET /plants HTTP/${version}`);
      const { status, message } = errorOf(data);
      assert.equal(status, 505, data);
      assert.match(message, new RegExp(`HTTP/${version.replace('.', '\\.')} is not supported`));
      assert.doesNotMatch(data, /fern/);
    }
    for (const version of ['1.0', '1.1']) assert.match(await send(`GET /plants HTTP/${version}`), / 200 [\s\S]*fern/);
    // Not an HTTP version at all: a malformed request.
    assert.equal(errorOf(await send('GET /plants HTTP/10.1')).status, 400);
  });

  it('refuses an absolute-form target naming another host than Host: 400', { timeout: 20_000 }, async () => {
    for (const [target, head] of [
      ['http://elsewhere.example/plants', undefined],
      [`http://127.0.0.1:${port + 1}/plants`, undefined],
      [`https://127.0.0.1:${port + 1}/plants`, undefined],
      [`http://127.0.0.1:${port}/plants`, 'Host: elsewhere.example\r\n'],
      ['http://elsewhere.example/plants', ''],
    ] as const) {
      const data = await send(`GET ${target} HTTP/1.1`, head);
      const { status, message } = errorOf(data);
      assert.equal(status, 400, `${target}: ${data}`);
      assert.match(message, /the request target names the host .* send the path alone/);
      assert.doesNotMatch(data, /fern/);
    }
    // Not a path, and not an absolute URL either.
    assert.equal(errorOf(await send('GET plants HTTP/1.1')).status, 400);
    assert.equal(errorOf(await send('GET ftp://127.0.0.1/plants HTTP/1.1')).status, 400);
  });

  it('serves an absolute-form target that names the Host it is sent with', { timeout: 20_000 }, async () => {
    assert.match(await send(`GET http://127.0.0.1:${port}/plants HTTP/1.1`), /^HTTP\/1\.1 200 [\s\S]*fern/);
    // Spelled differently, the same authority: case and the scheme's default port.
    assert.match(
      await send('GET http://Plants.Example:80/plants HTTP/1.1', 'Host: plants.example\r\n'),
      /^HTTP\/1\.1 200 [\s\S]*fern/,
    );
  });
});
