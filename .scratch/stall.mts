import { startTestGateway } from '/work/wt-h-http/test/helper.ts';
import { exchange } from '/work/wt-h-http/test/http/raw-socket.ts';
import { createLogger } from '/work/wt-h-http/src/logger.ts';
const gw = await startTestGateway({ logLevel: 'info', http: { requestTimeoutMs: 1500, headersTimeoutMs: 1000 } }, { logger: createLogger('info') });
const head = 'POST /portal/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"email":';
const res = await exchange(gw.url, head, { waitMs: 5000 });
console.error(res.status, Math.round(res.ms), res.body);
for (let i = 0; i < 5; i++) {
  await new Promise((r) => setTimeout(r, Math.random() * 1000));
  const r2 = await exchange(gw.url, 'GET / HTTP/1.1\r\n', { waitMs: 5000 });
  console.error('headers', r2.status, Math.round(r2.ms));
}
await new Promise((r) => setTimeout(r, 500));
await gw.destroy();
