// Route schemas compile at each route's first use (src/http/lazy-schemas.ts): every one of them
// still compiles, a route validates and serializes as with fastify's own compilers, and a schema
// that cannot compile says which route it belongs to.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { lazySchemas, schemaCompiles } from '../../src/http/lazy-schemas.ts';
import { call, startTestGateway, type TestGateway } from '../helper.ts';

describe('route schemas compiled at first use', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startTestGateway();
  });
  after(() => gw.destroy());

  it('validates at the first request of a route as fastify would: the field named, unknown fields refused, defaults applied', async () => {
    const missing = await call(gw.url, 'POST', '/portal/auth/signup', { body: { email: 'a@example.com' } });
    assert.equal(missing.status, 400);
    assert.equal(missing.body.error.code, 'missing_input');
    assert.match(missing.body.error.message, /password/);
    const extra = await call(gw.url, 'POST', '/portal/auth/signup', { body: { email: 'b@example.com', password: 'a long password', admin: true } });
    assert.equal(extra.status, 400);
    assert.match(extra.body.error.message, /admin/);
    const ok = await call(gw.url, 'POST', '/portal/auth/signup', { body: { email: 'c@example.com', password: 'a long password' } });
    assert.equal(ok.status, 201, JSON.stringify(ok.body));
    // The response serializer ran: only the schema's fields leave.
    assert.equal(typeof ok.body.session_token, 'string');
    assert.equal(ok.body.password_hash, undefined);
  });

  it('compiles every route schema of the app, once', () => {
    const compiled = gw.app.compileSchemas();
    assert.ok(compiled > 100, `${compiled} schemas`);
    assert.equal(gw.app.compileSchemas(), 0, 'nothing left to compile');
  });

  it('a second app of the process compiles nothing again: it uses what the first compiled, and validates as it', async () => {
    gw.app.compileSchemas();
    const before = schemaCompiles();
    const second = await startTestGateway();
    try {
      assert.ok(second.app.compileSchemas() > 100);
      assert.equal(schemaCompiles(), before);
      const extra = await call(second.url, 'POST', '/portal/auth/signup', { body: { email: 'b@example.com', password: 'a long password', admin: true } });
      assert.equal(extra.status, 400);
      assert.match(extra.body.error.message, /admin/);
    } finally {
      await second.destroy();
    }
  });

  it('a schema that cannot compile throws at its first use, naming its route', () => {
    const lazy = lazySchemas();
    const compile = lazy.compilersFactory.buildValidator!({}, { customOptions: {} }) as unknown as (route: object) => (data: unknown) => unknown;
    const validate = compile({ schema: { type: 'object', properties: { a: { type: 'no-such-type' } } }, method: 'POST', url: '/x', httpPart: 'body' });
    assert.throws(() => validate({}), /^Error: POST \/x body: schema is invalid: data\/properties\/a\/type/);
    assert.throws(() => lazy.compileAll(), /POST \/x body/, 'still to compile, so compileAll finds it');
  });

  it('takes a headers schema whose names are lowercase (fastify would lowercase them), and refuses one that is not', () => {
    const lazy = lazySchemas();
    const compile = lazy.compilersFactory.buildValidator!({}, { customOptions: {} }) as unknown as (route: object) => (data: unknown) => unknown;
    const route = (properties: object, required: string[] = []) => ({
      schema: { type: 'object', properties, required },
      method: 'POST',
      url: '/h',
      httpPart: 'headers',
    });
    const validate = compile(route({ 'idempotency-key': { type: 'string', maxLength: 3 } }, ['idempotency-key']));
    assert.equal(validate({ 'idempotency-key': 'abc' }), true);
    assert.equal(validate({ 'idempotency-key': 'abcd' }), false);
    assert.equal(validate({}), false);
    assert.throws(() => compile(route({ 'Idempotency-Key': { type: 'string' } })), /name the headers of its headers schema in lowercase/);
    assert.throws(() => compile(route({}, ['X-Sig'])), /lowercase/);
  });
});
