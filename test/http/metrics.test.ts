// Where GET /metrics is served: by default on a listener of its own (not the API port, which faces
// clients); on the API port only with metrics.listen "api", and then only with the metrics token.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { call, startTestGateway } from '../helper.ts';

const TOKEN = 'metrics-token-0123456789';

describe('/metrics', () => {
  it('is served on its own listener, not on the API port', async () => {
    const gw = await startTestGateway();
    try {
      assert.notEqual(gw.metricsUrl, gw.url);
      const m = await call(gw.metricsUrl, 'GET', '/metrics');
      assert.equal(m.status, 200);
      assert.match(m.headers.get('content-type') ?? '', /text\/plain/);
      assert.match(m.text, /gateway_http_connections \d+/);
      const api = await call(gw.url, 'GET', '/metrics');
      assert.equal(api.status, 404);
      assert.equal(api.body.error.code, 'not_found');
      const other = await call(gw.metricsUrl, 'GET', '/healthz');
      assert.equal(other.status, 404);
      assert.equal(other.body.error.code, 'not_found');
      assert.match(other.headers.get('x-request-id') ?? '', /^req_/);
    } finally {
      await gw.destroy();
    }
  });

  it('asks for the token on its own listener when one is set', async () => {
    const gw = await startTestGateway({ metrics: { listen: '127.0.0.1:0', token: TOKEN } });
    try {
      for (const authorization of [undefined, 'Bearer wrong-token', `Basic ${TOKEN}`]) {
        const res = await call(gw.metricsUrl, 'GET', '/metrics', { headers: authorization ? { authorization } : {} });
        assert.equal(res.status, 401, String(authorization));
        assert.equal(res.body.error.code, 'invalid_metrics_token');
      }
      assert.equal((await call(gw.metricsUrl, 'GET', '/metrics', { token: TOKEN })).status, 200);
    } finally {
      await gw.destroy();
    }
  });

  it('is served on the API port with metrics.listen "api", behind the token', async () => {
    const gw = await startTestGateway({ metrics: { listen: 'api', token: TOKEN } });
    try {
      assert.equal(gw.metricsUrl, gw.url);
      const refused = await call(gw.url, 'GET', '/metrics');
      assert.equal(refused.status, 401);
      assert.equal(refused.body.error.code, 'invalid_metrics_token');
      assert.match(refused.headers.get('x-request-id') ?? '', /^req_/);
      const ok = await call(gw.url, 'GET', '/metrics', { token: TOKEN });
      assert.equal(ok.status, 200);
      assert.match(ok.text, /gateway_http_requests_total/);
    } finally {
      await gw.destroy();
    }
  });

  it('is not served at all with metrics.listen "off"', async () => {
    const gw = await startTestGateway({ metrics: { listen: 'off' } });
    try {
      assert.equal(gw.metricsUrl, '');
      assert.equal((await call(gw.url, 'GET', '/metrics')).status, 404);
    } finally {
      await gw.destroy();
    }
  });
});
