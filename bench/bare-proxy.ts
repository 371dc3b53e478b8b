// The floor for this stack, measured beside the gateway by bench/chat.ts: fastify + undici passing
// chat calls through to the upstream with nothing else (no key check, limits, billing, usage,
// logging or validation). Whatever the gateway costs above it is the metered path's own; what it
// costs itself, no gateway on fastify and undici can go below on this machine.
//
//   UPSTREAM=http://127.0.0.1:PORT node --import tsx bench/bare-proxy.ts   (prints "listening <url>")
import Fastify from 'fastify';
import { Agent } from 'undici';

const upstream = process.env.UPSTREAM;
if (!upstream) throw new Error('UPSTREAM is required');
const agent = new Agent({ connections: 256, keepAliveTimeout: 30_000 });
const app = Fastify({ logger: false });
app.removeAllContentTypeParsers();
app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => done(null, body));

app.post('/v1/chat/completions', async (request, reply) => {
  const res = await agent.request({
    origin: upstream,
    path: '/v1/chat/completions',
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-upstream' },
    body: request.body as string,
  });
  reply.code(res.statusCode).header('content-type', String(res.headers['content-type'] ?? 'application/json'));
  // Streams are relayed as they arrive; JSON is read whole and sent, as the gateway does.
  if (String(res.headers['content-type']).startsWith('text/event-stream')) return reply.send(res.body);
  return reply.send(await res.body.text());
});

const url = await app.listen({ port: 0, host: '127.0.0.1' });
console.log(`listening ${url}`);
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
