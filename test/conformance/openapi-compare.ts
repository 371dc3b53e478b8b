// A structural comparison of two OpenAPI documents' schemas (ours, OpenAI's), in the two directions
// an API promises: a request schema of ours must take what theirs allows (`accepts`), and an answer
// schema of ours must promise nothing theirs does not allow (`conforms`). JSON types (integer within
// number, OpenAPI 3.0's `nullable`), constants and enums, object fields (required, missing, extra
// where theirs is closed), array items, unions (each alternative of the side that must be covered,
// against some alternative of the other, matched by its `type` constant where it has one) and
// `allOf`. Bounds (lengths, ranges, patterns) are not compared: they are a server's limits, written
// in its own document. Each difference is a Problem: where (a path into the value) and what.
type Schema = Record<string, any>;

export interface Problem {
  at: string;
  message: string;
}

export class Doc {
  constructor(readonly root: Schema) {}

  /** `s` with its `$ref`s followed. */
  deref(s: Schema | undefined): Schema {
    let out = s ?? {};
    for (let i = 0; typeof out.$ref === 'string' && i < 32; i++) {
      out = out.$ref
        .slice(2)
        .split('/')
        .reduce((o: any, k: string) => o?.[k.replaceAll('~1', '/').replaceAll('~0', '~')], this.root);
    }
    return out ?? {};
  }

  /**
   * The alternatives of a union, or null; OpenAPI 3.0's `nullable`, a list of types and an enum of
   * several values are unions too (of each type, of each value).
   */
  members(s: Schema): Schema[] | null {
    const d = this.deref(s);
    const m = d.anyOf ?? d.oneOf;
    if (Array.isArray(m)) return d.nullable === true ? [...m, { type: 'null' }] : m;
    const { nullable, ...rest } = d;
    if (nullable === true) return [rest, { type: 'null' }];
    if (Array.isArray(d.type) && d.type.length > 1) return d.type.map((type: string) => ({ ...d, type }));
    if (Array.isArray(d.enum) && d.enum.length > 1) return d.enum.map((v: unknown) => ({ ...d, enum: [v] }));
    return null;
  }

  /** The JSON types `s` admits, or null for any. */
  types(s: Schema): Set<string> | null {
    const d = this.deref(s);
    const union = this.members(d);
    if (union) {
      const out = new Set<string>();
      for (const m of union) {
        const t = this.types(m);
        if (t === null) return null;
        for (const x of t) out.add(x);
      }
      return out;
    }
    let out: Set<string> | null = null;
    const values = this.values(d);
    if (values) out = new Set(values.map(jsonType));
    else if (typeof d.type === 'string') out = new Set([d.type]);
    else if (Array.isArray(d.type)) out = new Set(d.type);
    for (const part of d.allOf ?? []) {
      const t = this.types(part);
      if (t && !out) out = t;
    }
    if (out && d.nullable === true) out.add('null');
    return out;
  }

  /** The values `s` is limited to (const or enum), or null. */
  values(s: Schema): unknown[] | null {
    const d = this.deref(s);
    if ('const' in d) return d.nullable ? [d.const, null] : [d.const];
    if (Array.isArray(d.enum)) return d.nullable ? [...d.enum, null] : d.enum;
    return null;
  }

  /** An object schema's fields, required names and closedness, `allOf` parts merged. */
  object(s: Schema): { properties: Record<string, Schema>; required: Set<string>; closed: boolean } | null {
    const d = this.deref(s);
    const parts = [d, ...(d.allOf ?? []).map((p: Schema) => this.object(p)).filter(Boolean)];
    if (!d.properties && !(d.allOf ?? []).length) return null;
    const out = { properties: {} as Record<string, Schema>, required: new Set<string>(), closed: d.additionalProperties === false };
    for (const p of parts) {
      Object.assign(out.properties, p.properties ?? {});
      for (const r of p.required ?? []) out.required.add(r);
      if (p.closed) out.closed = true;
    }
    return out;
  }

  /** The `type` constant of an object schema (an event's, an item's), or null. */
  tag(s: Schema): unknown {
    const t = this.object(s)?.properties.type;
    const v = t ? this.values(t) : null;
    return v && v.length === 1 ? v[0] : null;
  }
}

const jsonType = (v: unknown): string =>
  v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v === 'number' ? (Number.isInteger(v) ? 'integer' : 'number') : typeof v;
const within = (t: string, set: Set<string>) => set.has(t) || (t === 'integer' && set.has('number'));
const MAX_DEPTH = 24;

/** The problems with `ours` taking every value `theirs` allows. */
export function accepts(ours: Doc, o: Schema, theirs: Doc, t: Schema, at = '', depth = 0): Problem[] {
  if (depth > MAX_DEPTH) return [];
  const tu = theirs.members(t);
  if (tu) return tu.flatMap((m) => accepts(ours, o, theirs, m, at, depth + 1));
  const ou = ours.members(o);
  if (ou)
    return best(
      ou.map((m) => accepts(ours, m, theirs, t, at, depth + 1)),
      ou,
      ours,
      theirs.tag(t),
      theirs.types(t),
    );
  const problems: Problem[] = [];
  const [ot, tt] = [ours.types(o), theirs.types(t)];
  if (ot && tt) {
    const missing = [...tt].filter((x) => !within(x, ot));
    if (missing.length > 0) problems.push({ at, message: `takes no ${missing.join(' or ')} (theirs does)` });
  }
  const [ov, tv] = [ours.values(o), theirs.values(t)];
  if (ov && tv) {
    const missing = tv.filter((v) => !ov.some((x) => x === v));
    if (missing.length > 0) problems.push({ at, message: `takes no ${JSON.stringify(missing)} (theirs does)` });
  }
  const [oo, to] = [ours.object(o), theirs.object(t)];
  if (oo && to) {
    for (const [k, ts] of Object.entries(to.properties)) {
      if (k in oo.properties) problems.push(...accepts(ours, oo.properties[k]!, theirs, ts, `${at}/${k}`, depth + 1));
      else if (oo.closed) problems.push({ at: `${at}/${k}`, message: 'is refused (theirs has it)' });
    }
    for (const k of oo.required) if (!to.required.has(k)) problems.push({ at: `${at}/${k}`, message: 'is required (optional in theirs)' });
  }
  const [oi, ti] = [ours.deref(o).items, theirs.deref(t).items];
  if (oi && ti) problems.push(...accepts(ours, oi, theirs, ti, `${at}/[]`, depth + 1));
  return problems;
}

/** The problems with every value `ours` allows being one `theirs` allows. */
export function conforms(ours: Doc, o: Schema, theirs: Doc, t: Schema, at = '', depth = 0): Problem[] {
  if (depth > MAX_DEPTH) return [];
  const ou = ours.members(o);
  if (ou) return ou.flatMap((m) => conforms(ours, m, theirs, t, at, depth + 1));
  const tu = theirs.members(t);
  if (tu)
    return best(
      tu.map((m) => conforms(ours, o, theirs, m, at, depth + 1)),
      tu,
      theirs,
      ours.tag(o),
      ours.types(o),
    );
  const problems: Problem[] = [];
  const [ot, tt] = [ours.types(o), theirs.types(t)];
  if (tt) {
    if (!ot) problems.push({ at, message: `may be any value (theirs: ${[...tt].join(', ')})` });
    else {
      const extra = [...ot].filter((x) => !within(x, tt));
      if (extra.length > 0) problems.push({ at, message: `may be ${extra.join(' or ')} (theirs may not)` });
    }
  }
  const [ov, tv] = [ours.values(o), theirs.values(t)];
  if (tv) {
    if (!ov) problems.push({ at, message: `may be any ${[...(ot ?? [])].join(' or ')} (theirs: ${JSON.stringify(tv)})` });
    else {
      const extra = ov.filter((v) => !tv.some((x) => x === v));
      if (extra.length > 0) problems.push({ at, message: `may be ${JSON.stringify(extra)} (theirs may not)` });
    }
  }
  const [oo, to] = [ours.object(o), theirs.object(t)];
  if (oo && to) {
    for (const k of to.required) {
      if (!(k in oo.properties)) problems.push({ at: `${at}/${k}`, message: 'is never sent (theirs requires it)' });
      else if (!oo.required.has(k)) problems.push({ at: `${at}/${k}`, message: 'is not always sent (theirs requires it)' });
    }
    for (const [k, os] of Object.entries(oo.properties)) {
      if (k in to.properties) problems.push(...conforms(ours, os, theirs, to.properties[k]!, `${at}/${k}`, depth + 1));
      else if (to.closed) problems.push({ at: `${at}/${k}`, message: 'is sent (theirs has no such field)' });
    }
  }
  const [oi, ti] = [ours.deref(o).items, theirs.deref(t).items];
  if (oi && ti && ours.deref(o).maxItems !== 0) problems.push(...conforms(ours, oi, theirs, ti, `${at}/[]`, depth + 1)); // an array always empty sends no items
  return problems;
}

/**
 * Of a union's alternatives (`members`, each with its problems in `results`), the one meant: the
 * alternative with the other side's `type` constant if one has it, else one of the same JSON type;
 * none if any fits with no problem, else the closest one's problems.
 */
function best(results: Problem[][], members: Schema[], doc: Doc, tag: unknown, types: Set<string> | null): Problem[] {
  if (results.some((r) => r.length === 0)) return [];
  let candidates = members.map((_, i) => i);
  const tagged = tag === null ? [] : candidates.filter((i) => doc.tag(members[i]!) === tag);
  if (tagged.length > 0) candidates = tagged;
  else if (types) {
    const typed = candidates.filter((i) => [...(doc.types(members[i]!) ?? types)].some((x) => types.has(x) || within(x, types)));
    if (typed.length > 0) candidates = typed;
  }
  const ranked = candidates.sort((a, b) => results[a]!.length - results[b]!.length);
  return results[ranked[0]!]!;
}
