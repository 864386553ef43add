// The smallest Fastify server doing the list scenario's request: one owner's plants in an array, a bearer check, a
// schema-serialized array and a Link to the next page. The baseline must not be slower than it.
//   node dist/bench/minimal.js PORT ROWS TOKENS_FILE   (the first token's owner has plants 1..ROWS)
import { readFileSync } from 'node:fs';
import Fastify from 'fastify';
import { plantBody } from './scenarios.js';

const [port, rows, file] = process.argv.slice(2);
const auth = `Bearer ${readFileSync(file!, 'utf8').split('\n')[0]}`;
const plants = Array.from({ length: Number(rows) }, (_, i) => plantBody(i + 1)).map(({ name, tag }) => ({ name, tag }));
const json = { type: 'object', properties: { name: { type: 'string' }, tag: { type: 'string' } } };
const app = Fastify();
type List = { Querystring: { limit?: string; cursor?: string } };
app.get<List>('/plants', { schema: { response: { 200: { type: 'array', items: json } } } }, (request, reply) => {
  if (request.headers.authorization !== auth) return reply.code(401).send({ error: 401, message: 'bad token' });
  const [limit, from] = [Number(request.query.limit ?? 1000), Number(request.query.cursor ?? 0)];
  if (from + limit < plants.length)
    void reply.header('link', `</plants?limit=${limit}&cursor=${from + limit}>; rel="next"`);
  return reply.send(plants.slice(from, from + limit));
});
await app.listen({ host: '127.0.0.1', port: Number(port) });
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));
