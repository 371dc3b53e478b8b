// Route schemas compiled at a route's first use, not at its registration. Fastify compiles every
// route's validators (ajv) and response serializers (fast-json-stringify) when the route is added:
// ~0.7 s of CPU for our ~150 routes at every start, in each of the ~100 test processes that start a
// gateway, while a process serves only some of them (a test a handful). Here fastify's own two
// compilers (the packages it would load itself, with the options it passes) are wrapped: each
// compile returns a function that compiles on its first call and then calls what it compiled. The
// first request of a route pays its compile (about a millisecond); a schema ajv or fast-json-stringify
// cannot compile throws there (a 500) instead of at start, so `compileAll` compiles every one and a
// test calls it on the whole app (test/http/lazy-schemas.test.ts).
//
// What is compiled is kept for every app of the process, by the schema's JSON and the compilers'
// options: a process holds one app in production, where this changes nothing (each schema compiles
// once, as before), while a test process starts dozens, each of which compiled again what the one
// before had (~14 s of CPU over the suite). Most route schemas are built anew by each app's route
// registration, so the key is what they say, not which object they are.
import type { FastifyServerOptions } from 'fastify';
import ValidatorSelector from '@fastify/ajv-compiler';
import SerializerSelector from '@fastify/fast-json-stringify-compiler';

/** Compiled functions by compiler, options, route part and schema. */
const compiled = new Map<string, unknown>();
let compiles = 0;

/** `compile()`, or what it gave before for this key and schema. */
function shared<F>(schema: unknown, key: string, compile: () => F): F {
  const full = `${key} ${JSON.stringify(schema)}`;
  if (compiled.has(full)) return compiled.get(full) as F;
  const f = compile();
  compiles += 1;
  compiled.set(full, f);
  return f;
}

/** How many schemas this process has compiled (a test reads it). */
export const schemaCompiles = (): number => compiles;

/** A route's schema definition as fastify hands it to a compiler (typed per compiler upstream; one name here for both). */
// biome-ignore lint/suspicious/noExplicitAny: the validator's and the serializer's definitions differ in type and are only passed through
type RouteSchemaDef = any;
type Compile<F> = (route: RouteSchemaDef) => F;
type CompilersFactory = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>;
/** What @fastify/ajv-compiler's compile returns: ajv's validate function. */
type AjvValidate = ReturnType<ReturnType<ReturnType<typeof ValidatorSelector>>>;
/** The validate function fastify is given here: ajv's call, `errors` and `schemaEnv` (all fastify uses). */
type Validate = ((data: unknown, dataCxt?: Parameters<AjvValidate>[1]) => unknown) & { errors?: AjvValidate['errors']; schemaEnv?: true };

export interface LazySchemas {
  /** For fastify's `schemaController.compilersFactory`. */
  compilersFactory: CompilersFactory;
  /** Compiles every schema not compiled yet, and says how many; throws what a compiler throws, naming the route. */
  compileAll(): number;
}

export function lazySchemas(): LazySchemas {
  const pending = new Set<() => void>();
  const buildValidator = ValidatorSelector();
  const buildSerializer = SerializerSelector();
  /** `compile(route)` at the first call of the function returned, kept; pending until it compiled. */
  const later = <F>(compile: Compile<F>, route: RouteSchemaDef, part: string, key: string): (() => F) => {
    let real: F | undefined;
    const load = (): F => {
      if (real) return real;
      try {
        real = shared(route.schema, key, () => compile(route));
      } catch (err) {
        throw new Error(`${route.method} ${route.url} ${part}: ${(err as Error).message}`, { cause: err });
      }
      pending.delete(load);
      return real;
    };
    pending.add(load);
    return load;
  };
  const validatorFactory = (...args: Parameters<typeof buildValidator>) => {
    const compile = buildValidator(...args);
    const compiler = `validator ${JSON.stringify(args)}`;
    return (route: RouteSchemaDef): Validate => {
      // Fastify lowercases a headers schema's property names (headers arrive lowercased) only
      // for its own compiler; here they must be written in lowercase, which makes that a no-op.
      if (route.httpPart === 'headers' && !lowercaseNames(route.schema)) {
        throw new Error(`${route.method} ${route.url}: name the headers of its headers schema in lowercase (src/http/lazy-schemas.ts)`);
      }
      const load = later(compile, route, route.httpPart, `${compiler} ${route.httpPart}`);
      // ajv's function sets its `errors` after each call, which fastify reads from the function
      // it was given; with `schemaEnv` set fastify passes the request as the root's parent, as
      // to ajv's own function.
      const validate: Validate = (data, dataCxt) => {
        const fn = load();
        const ok = fn(data, dataCxt);
        validate.errors = fn.errors;
        return ok;
      };
      validate.schemaEnv = true;
      return validate;
    };
  };
  return {
    compilersFactory: {
      // The one cast: @fastify/ajv-compiler's types (which fastify's name for this factory) say its
      // compile returns ajv's own validate function, with its `schema` and a `schemaEnv` object,
      // which a function that compiles at its first call cannot have yet; fastify uses only its
      // call, `errors` and `schemaEnv`'s truth, which Validate has.
      buildValidator: validatorFactory as CompilersFactory['buildValidator'],
      buildSerializer(...args: Parameters<typeof buildSerializer>) {
        const compile = buildSerializer(...args);
        const compiler = `serializer ${JSON.stringify(args)}`;
        return (route: RouteSchemaDef) => {
          const load = later(compile, route, String(route.httpStatus), `${compiler} ${route.httpStatus} ${route.contentType ?? ''}`);
          return (data: unknown) => load()(data);
        };
      },
    },
    compileAll() {
      const loads = [...pending];
      for (const load of loads) load();
      return loads.length;
    },
  };
}

/** Whether every property name and required name in a schema (and the schemas inside it) is lowercase. */
function lowercaseNames(schema: unknown): boolean {
  if (Array.isArray(schema)) return schema.every(lowercaseNames);
  if (schema === null || typeof schema !== 'object') return true;
  return Object.entries(schema).every(([key, value]) => {
    if (key === 'properties' && value && typeof value === 'object') {
      return Object.entries(value).every(([name, sub]) => name === name.toLowerCase() && lowercaseNames(sub));
    }
    if (key === 'required' && Array.isArray(value)) return value.every((name) => typeof name !== 'string' || name === name.toLowerCase());
    return lowercaseNames(value);
  });
}
