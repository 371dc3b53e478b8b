// The SSRF rules: every spelling of a non-public address refused when the switch is off, at
// creation and at delivery, names resolved through DNS checked, and the switch lifting the rule.
import assert from 'node:assert/strict';
import { lookup } from 'node:dns/promises';
import { hostname } from 'node:os';
import { test } from 'node:test';
import { addressRange } from '../../src/shared/address.ts';
import { BLOCKED_CODE, checkWebhookUrl, safeLookup, WebhookUrlError } from '../../src/webhooks/address.ts';
import { WebhookHttp } from '../../src/webhooks/http.ts';
import { startReceiver } from './receiver.ts';

const STRICT = { allowPrivateNetworks: false, allowHttp: false };
const HTTP_ONLY = { allowPrivateNetworks: false, allowHttp: true };
const OPEN = { allowPrivateNetworks: true, allowHttp: true };

const REFUSED = [
  // IPv4 loopback in every spelling the URL parser accepts
  '127.0.0.1',
  '127.1',
  '2130706433',
  '0x7f000001',
  '0x7f.0.0.1',
  '0177.0.0.1',
  '017700000001',
  '127.0.0.1.',
  // private, link-local (cloud metadata), CGNAT (Alibaba metadata), unspecified, broadcast, multicast, reserved
  '10.0.0.1',
  '172.16.0.1',
  '192.168.0.1',
  '169.254.169.254',
  '0xa9fea9fe',
  '100.100.100.200',
  '0.0.0.0',
  '0',
  '255.255.255.255',
  '224.0.0.1',
  '240.0.0.1',
  '192.0.2.1',
  '198.18.0.1',
  // IPv6: loopback, unspecified, IPv4-mapped (both spellings), IPv4-compatible, link-local, unique-local
  // (AWS metadata fd00:ec2::254), multicast, NAT64, 6to4, Teredo, documentation
  '[::1]',
  '[0:0:0:0:0:0:0:1]',
  '[::]',
  '[::ffff:127.0.0.1]',
  '[::ffff:7f00:1]',
  '[::ffff:a9fe:a9fe]',
  '[0:0:0:0:0:ffff:127.0.0.1]',
  '[::7f00:1]',
  '[::ffff:0:7f00:1]',
  '[fe80::1]',
  '[fd00:ec2::254]',
  '[fc00::1]',
  '[ff02::1]',
  '[64:ff9b::7f00:1]',
  '[2002:7f00:1::]',
  '[2001::1]',
  '[2001:db8::1]',
  // names that are local by definition
  'localhost',
  'LOCALHOST.',
  'api.localhost',
  'metadata.google.internal',
];

test('every spelling of a loopback, private, link-local, metadata or special address is refused', () => {
  for (const host of REFUSED) {
    assert.throws(
      () => checkWebhookUrl(`https://${host}/hook`, STRICT),
      (err: unknown) => err instanceof WebhookUrlError && err.reason === 'blocked_address',
      host,
    );
    assert.doesNotThrow(() => checkWebhookUrl(`https://${host}/hook`, OPEN), `${host} with the switch on`);
  }
});

test('public addresses and names pass; http only when allowed; credentials and garbage refused', () => {
  for (const url of ['https://8.8.8.8/h', 'https://[2606:4700:4700::1111]/h', 'https://hooks.example.com:8443/in?x=1']) {
    assert.doesNotThrow(() => checkWebhookUrl(url, STRICT), url);
  }
  assert.equal(addressRange('[::ffff:8.8.8.8]'), 'unicast');
  assert.throws(() => checkWebhookUrl('http://hooks.example.com/', STRICT), /https/);
  assert.doesNotThrow(() => checkWebhookUrl('http://hooks.example.com/', HTTP_ONLY));
  for (const bad of ['hooks.example.com', 'javascript:alert(1)', 'file:///etc/passwd', 'https://u:p@hooks.example.com/', 'https://']) {
    assert.throws(() => checkWebhookUrl(bad, OPEN), WebhookUrlError, bad);
  }
});

test('names are resolved and every address checked: localhost resolves to loopback and is refused', async () => {
  const lookup = safeLookup(STRICT);
  const err = await new Promise<NodeJS.ErrnoException | null>((resolve) => lookup('localhost', { all: true }, (e) => resolve(e)));
  assert.equal(err?.code, BLOCKED_CODE);
  const open = safeLookup(OPEN);
  const [e2, addrs] = await new Promise<[unknown, unknown]>((resolve) => open('localhost', { all: true }, (e, a) => resolve([e, a])));
  assert.equal(e2, null);
  assert.ok(Array.isArray(addrs) && addrs.length > 0);
});

test('at delivery: a literal or a name reaching a private address gets blocked_address and no request is made', async (t) => {
  const r = await startReceiver();
  t.after(() => r.close());
  const port = new URL(r.url).port;
  const strict = new WebhookHttp(HTTP_ONLY, 2000);
  t.after(() => strict.close());
  for (const url of [
    `http://127.0.0.1:${port}/hook`,
    `http://2130706433:${port}/hook`,
    `http://[::ffff:127.0.0.1]:${port}/hook`,
    `http://localhost:${port}/hook`,
  ]) {
    const out = await strict.post(url, 'whsec_x', 'ping', '{}');
    assert.deepEqual([out.ok, out.status_code, out.error], [false, null, 'blocked_address'], url);
  }
  // A name not local by its spelling, resolving to a private address (this machine's host name,
  // when /etc/hosts maps it so): refused by the connection's own lookup, after resolution.
  const host = hostname();
  const resolved = await lookup(host).catch(() => null);
  if (resolved && addressRange(resolved.address) !== 'unicast') {
    assert.doesNotThrow(() => checkWebhookUrl(`http://${host}:${port}/`, HTTP_ONLY), 'not refused by its spelling');
    const out = await strict.post(`http://${host}:${port}/hook`, 'whsec_x', 'ping', '{}');
    assert.deepEqual([out.ok, out.error], [false, 'blocked_address'], host);
  } else {
    t.diagnostic(`${host} does not resolve to a private address here; the DNS path is covered by safeLookup above`);
  }
  assert.equal(r.received.length, 0, 'nothing reached the receiver');

  const open = new WebhookHttp(OPEN, 2000);
  t.after(() => open.close());
  const ok = await open.post(`http://localhost:${port}/hook`, 'whsec_x', 'ping', '{}');
  assert.equal(ok.ok, true, JSON.stringify(ok));
  assert.equal(r.received.length, 1);
});

test('a refused connection and an https receiver without a valid certificate are failures', async (t) => {
  const open = new WebhookHttp(OPEN, 2000);
  t.after(() => open.close());
  const r = await startReceiver();
  const port = new URL(r.url).port;
  await r.close();
  const refused = await open.post(`http://127.0.0.1:${port}/hook`, 'whsec_x', 'ping', '{}');
  assert.deepEqual([refused.ok, refused.error], [false, 'connection_refused']);
  const plain = await startReceiver();
  t.after(() => plain.close());
  const tls = await open.post(`https://127.0.0.1:${new URL(plain.url).port}/hook`, 'whsec_x', 'ping', '{}');
  assert.equal(tls.ok, false);
  assert.ok(['tls_error', 'connection_reset', 'request_failed'].includes(String(tls.error)), String(tls.error));
});
