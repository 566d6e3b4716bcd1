/** fast-check arbitraries for hostile request bodies, built from the golden fixtures. */
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { KIND_NAMES, type KindName } from '../../src/records/kind.js';
import { FIXTURES, validRecords } from '../records/fixtures.js';

export const v1Json = (kind: KindName): unknown =>
  JSON.parse(readFileSync(new URL(`${kind}/v1/valid.json`, FIXTURES), 'utf8'));
export const v1Csv = (kind: KindName): string =>
  readFileSync(new URL(`${kind}/v1/valid.csv`, FIXTURES), 'utf8');
export const v1Profile = (kind: KindName): unknown =>
  JSON.parse(readFileSync(new URL(`${kind}/v1/profile.json`, FIXTURES), 'utf8'));

/** The onboarding profiles of the v1 fixtures for ACME, as config YAML (JSON is YAML). */
export function onboardingYaml(): string {
  return `onboarding: ${JSON.stringify({ ACME: Object.fromEntries(KIND_NAMES.map((kind) => [kind, v1Profile(kind)])) })}`;
}

const PROTO_KEYS = [
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  'valueOf',
];

/** Values of every JSON type and then some: prototype keys, NUL, lone surrogates, numbers at the edges. */
export const hostileValue: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.string({ unit: 'binary' }),
    fc.constantFrom(
      '',
      '\u0000',
      'ACME\u0000',
      '\ud800',
      '\ufeff',
      'A'.repeat(70_000),
      '💥'.repeat(1000),
      'null',
      '[]',
      '{}',
    ),
    fc.double(),
    fc.constantFrom(0, -0, 1e308, -1e308, Number.MAX_SAFE_INTEGER + 2, 1e-320),
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 5 }),
    fc.dictionary(fc.oneof(fc.constantFrom(...PROTO_KEYS), fc.string()), tie('value'), {
      maxKeys: 5,
    }),
  ),
})).value;

type Json = unknown;

/** Every path (array of keys/indexes) inside a JSON value, the root included. */
function paths(
  value: Json,
  at: (string | number)[] = [],
  out: (string | number)[][] = [],
): (string | number)[][] {
  out.push(at);
  if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) paths(v, [...at, i], out);
  } else if (typeof value === 'object' && value !== null)
    for (const [k, v] of Object.entries(value)) paths(v, [...at, k], out);
  return out;
}

function setAt(
  root: Json,
  path: (string | number)[],
  replace: (old: Json) => Json | undefined,
): Json {
  if (path.length === 0) return replace(root);
  const copy: Json = structuredClone(root);
  if (typeof copy !== 'object' || copy === null) return copy; // an earlier edit replaced the root
  let parent = copy as Record<string | number, Json>;
  for (const key of path.slice(0, -1)) {
    const next = parent[key];
    if (typeof next !== 'object' || next === null) return copy; // an earlier edit removed or replaced it
    parent = next as Record<string | number, Json>;
  }
  const last = path[path.length - 1]!;
  const next = replace(parent[last]);
  if (next === undefined) delete parent[last];
  else
    Object.defineProperty(parent, last, {
      value: next,
      enumerable: true,
      writable: true,
      configurable: true,
    }); // `__proto__` as an own key
  return copy;
}

/** A valid JSON value with one to three places replaced by hostile values, removed, or given prototype keys. */
export function mutated(seed: Json): fc.Arbitrary<Json> {
  const all = paths(seed);
  const edit = fc.tuple(
    fc.nat(all.length - 1),
    fc.oneof(
      hostileValue.map((v) => ({ set: v })),
      fc.constant({ remove: true }),
      fc.constantFrom(...PROTO_KEYS).map((k) => ({ protoKey: k })),
    ),
  );
  return fc.array(edit, { minLength: 1, maxLength: 3 }).map((edits) => {
    let value = seed;
    for (const [index, op] of edits) {
      const path = all[index]!;
      value = setAt(value, path, (old) => {
        if ('set' in op) return op.set;
        if ('remove' in op) return undefined;
        if (typeof old === 'object' && old !== null && !Array.isArray(old))
          return { ...old, [op.protoKey]: { polluted: true } };
        return old;
      });
    }
    return value;
  });
}

/** Bytes derived from a valid body: flipped bytes, invalid UTF-8, NUL, BOMs, truncation, huge inserts. */
export function mutatedBytes(seed: string): fc.Arbitrary<Buffer> {
  const bytes = Buffer.from(seed, 'utf8');
  const op = fc.oneof(
    fc
      .tuple(fc.nat(bytes.length), fc.integer({ min: 0, max: 255 }))
      .map(([i, b]) => ({ at: i, insert: Buffer.from([b]) })),
    fc.nat(bytes.length).map((i) => ({ at: i, insert: Buffer.from([0xff, 0xfe, 0xc3]) })),
    fc.nat(bytes.length).map((i) => ({ at: i, insert: Buffer.from([0]) })),
    fc.nat(bytes.length).map((i) => ({ at: i, insert: Buffer.from('"') })),
    fc.nat(bytes.length).map((i) => ({ at: i, insert: Buffer.from(',,,\n') })),
    fc.nat(bytes.length).map((i) => ({ at: i, insert: Buffer.from('x'.repeat(1_100_000)) })),
    fc.constant({ at: 0, insert: Buffer.from([0xef, 0xbb, 0xbf]) }),
    fc.constant({ at: 0, insert: Buffer.from([0xff, 0xfe]) }),
    fc.nat(bytes.length).map((i) => ({ truncate: i })),
  );
  return fc.array(op, { minLength: 1, maxLength: 4 }).map((ops) => {
    let out = bytes;
    for (const o of ops) {
      if ('truncate' in o) out = out.subarray(0, Math.min(o.truncate, out.length));
      else {
        const at = Math.min(o.at, out.length);
        out = Buffer.concat([out.subarray(0, at), o.insert, out.subarray(at)]);
      }
    }
    return out;
  });
}

/** CSV made hostile line by line: ragged rows, stray and unclosed quotes, bare CR, NUL, formula-like cells. */
export function mutatedCsv(seed: string): fc.Arbitrary<string> {
  const lines = seed.trimEnd().split('\n');
  const lineOp = fc.oneof(
    fc.constant((l: string) => l.split(',').slice(0, -1).join(',')),
    fc.constant((l: string) => `${l},extra`),
    fc.constant((l: string) => `"${l}`),
    fc.constant((l: string) => l.replace(',', ',"a"b"')),
    fc.constant((l: string) => `${l}\r`),
    fc.constant((l: string) => l.replace(/,/g, '\u0000,')),
    fc.constant((l: string) => l.replace(/[^,]+$/, '=CMD()')),
    fc.constant((l: string) => l.replace(/^[^,]+/, 'OTHER')),
    fc.constant(() => ''),
    fc.string({ unit: 'binary', maxLength: 40 }).map((s) => () => s),
  );
  return fc
    .tuple(
      fc.array(fc.tuple(fc.nat(lines.length - 1), lineOp), { minLength: 1, maxLength: 4 }),
      fc.constantFrom('\n', '\r\n', '\r'),
    )
    .map(([ops, eol]) => {
      const out = [...lines];
      for (const [i, f] of ops) out[i] = f(out[i]!);
      return `${out.join(eol)}${eol}`;
    });
}

/** `{"a":` nested `depth` times around a value, as JSON text (building it as an object would overflow here first). */
export function deepJson(depth: number, open = '{"a":', close = '}'): string {
  return `${open.repeat(depth)}1${close.repeat(depth)}`;
}

export const v2Seeds = (kind: KindName): Record<string, unknown>[] =>
  validRecords(kind).slice(0, 2);
