import { Readable } from 'node:stream';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH } from '../../src/decode/json.js';
import { jsonArrayCandidates } from '../../src/decode/json-array.js';

/** The text split into chunks of `size` bytes, as a file read stream gives them. */
function chunked(text: string | Buffer, size: number): () => Readable {
  const bytes = Buffer.isBuffer(text) ? text : Buffer.from(text);
  return () => {
    const parts: Buffer[] = [];
    for (let i = 0; i < bytes.length; i += size) parts.push(bytes.subarray(i, i + size));
    return Readable.from(parts, { objectMode: true });
  };
}

async function decode(text: string | Buffer, size = 64 * 1024, max?: number): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const candidate of jsonArrayCandidates(chunked(text, size), max)) {
    out.push(candidate.record);
  }
  return out;
}

const TRICKY = [
  { a: '] } , [ {', b: 'quote \\" and backslash \\\\', c: [1, [2, { d: null }]] },
  'a "string" element',
  -12.5e3,
  true,
  null,
  [],
  {},
  { unicode: 'Grüße, 東京, 🚚' },
];

describe('jsonArrayCandidates: a JSON array streamed element by element', () => {
  it('yields what JSON.parse gives, whatever the chunk boundaries', async () => {
    const text = ` \n[ ${TRICKY.map((v) => JSON.stringify(v)).join(' ,\n')} ]\n `;
    for (const size of [1, 2, 3, 5, 7, 64, 1 << 16]) {
      expect(await decode(text, size)).toEqual(JSON.parse(text));
    }
  });

  it('agrees with JSON.parse on any array, spaced and chunked at random', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.jsonValue({ maxDepth: 4 }), { maxLength: 12 }),
        fc.integer({ min: 1, max: 40 }),
        fc.boolean(),
        async (values, size, pretty) => {
          const text = JSON.stringify(values, null, pretty ? 2 : undefined);
          expect(await decode(text, size)).toEqual(JSON.parse(text));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('takes an empty array and a UTF-8 byte order mark', async () => {
    expect(await decode('[]')).toEqual([]);
    expect(
      await decode(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('[1]')]), 1),
    ).toEqual([1]);
  });

  it.each([
    ['', /The file is empty/],
    ['   ', /The file is empty/],
    ['{"a":1}', /Expected a JSON array of records; the file starts with "\{" at byte 0/],
    ['[{"a":1}', /Not a complete JSON array: the file ends after 1 record/],
    ['[{"a":1},', /Not a complete JSON array/],
    ['[{"a":1}] x', /Not valid JSON: unexpected "x" after the array ends, at byte 10/],
    [
      '[{"a":1} {"b":2}]',
      /Not valid JSON: expected "," or "\]" after record 0, found "\{" at byte 9/,
    ],
    ['[,1]', /expected a record, found "," at byte 1/],
    ['[1,]', /expected a record, found "\]" at byte 3/],
    ['[{"a":1]', /Not a complete JSON array|Record 0 is not valid JSON/],
    ['[{"a":tru}]', /Record 0 is not valid JSON/],
    ['[{"a":1},{"b":}]', /Record 1 is not valid JSON/],
    ['[12x]', /Record 0 is not valid JSON/],
  ])('refuses %j with a reason naming where', async (text, reason) => {
    await expect(decode(text, 3)).rejects.toThrow(reason);
  });

  it('refuses invalid UTF-8 in a record, naming it', async () => {
    const bytes = Buffer.concat([
      Buffer.from('[{"a":1},{"b":"'),
      Buffer.from([0xc3, 0x28]),
      Buffer.from('"}]'),
    ]);
    await expect(decode(bytes)).rejects.toThrow(/Record 1 is not valid UTF-8/);
  });

  it('bounds nesting and the size of one record, so a hostile file cannot exhaust the worker', async () => {
    const deep = `[${'['.repeat(MAX_JSON_DEPTH + 1)}${']'.repeat(MAX_JSON_DEPTH + 1)}]`;
    await expect(decode(deep, 5)).rejects.toThrow(
      /Record 0 nests arrays and objects deeper than 64/,
    );
    const big = `[{"a":1},{"b":"${'x'.repeat(5000)}"}]`;
    await expect(decode(big, 100, 4096)).rejects.toThrow(/Record 1 is larger than 4096 bytes/);
    expect(await decode(big, 100, 8192)).toHaveLength(2);
  });

  it('reads one chunk ahead at most: records are handed on as they are found, not after the whole file', async () => {
    const record = JSON.stringify({ order: { id: 'x'.repeat(200), lines: [1, 2, 3] } });
    const count = 50_000;
    let pulled = 0;
    function* parts() {
      pulled += 1;
      yield Buffer.from('[');
      for (let i = 0; i < count; i++) {
        pulled += 1;
        yield Buffer.from(i === 0 ? record : `,${record}`);
      }
      yield Buffer.from(']');
    }
    let seen = 0;
    let mostAhead = 0;
    for await (const _ of jsonArrayCandidates(() => Readable.from(parts(), { objectMode: true }))) {
      seen += 1;
      // Record n ends in chunk n + 1 (after '['); Readable.from buffers a few chunks ahead.
      mostAhead = Math.max(mostAhead, pulled - (seen + 1));
    }
    expect(seen).toBe(count);
    expect(mostAhead).toBeLessThanOrEqual(20);
  });
});
