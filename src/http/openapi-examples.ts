import { readFileSync } from 'node:fs';

/**
 * Request examples of /openapi.json: the demo fixtures (`fixtures/demo/`, shipped in the release
 * folder), one batch per kind and shape, all for the demo business `DEMO` — so "Try it out" in
 * /docs, with the demo credential `DEMO` / `demo-api-key` where the demo tenant is configured
 * (a development service), answers `202`. test/http/openapi-examples.test.ts sends every one of them.
 */
const FOLDER = new URL('../../fixtures/demo/', import.meta.url);

export type ExampleShape = 'v2' | 'v1-json' | 'v1-csv';

const FILES: Record<ExampleShape, (kind: string) => string> = {
  v2: (kind) => `${kind}.json`,
  'v1-json': (kind) => `${kind}.v1.json`,
  'v1-csv': (kind) => `${kind}.csv`,
};

/** The fixture's text; undefined when the release does not ship it (the document then has no example). */
export function exampleText(kind: string, shape: ExampleShape): string | undefined {
  try {
    return readFileSync(new URL(FILES[shape](kind), FOLDER), 'utf8');
  } catch {
    return undefined;
  }
}

/** An OpenAPI `examples` map with the demo fixture of this kind and shape, or nothing. */
export function requestExamples(
  kind: string,
  label: string,
  shape: ExampleShape,
): { examples?: Record<string, { summary: string; value: unknown }> } {
  const text = exampleText(kind, shape);
  if (text === undefined) return {};
  const value: unknown = shape === 'v1-csv' ? text : JSON.parse(text);
  const what = shape === 'v1-csv' ? 'CSV' : shape === 'v1-json' ? 'v1 JSON' : 'batch';
  return {
    examples: {
      demo: { summary: `A ${label} ${what} of the demo business DEMO (fixtures/demo)`, value },
    },
  };
}
