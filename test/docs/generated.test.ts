import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { generatedFiles } from '../../scripts/docs/generate.js';

const ROOT = new URL('../../', import.meta.url);

describe('files generated from the zod schemas', () => {
  // A schema change without `npm run docs:generate` fails here, naming the stale file.
  it.each(generatedFiles().map((file) => [file.path, file]))(
    '%s is what npm run docs:generate writes',
    (_path, file) => {
      const committed = readFileSync(new URL(file.path, ROOT), 'utf8');
      expect(committed, `${file.path} is stale: run npm run docs:generate`).toBe(file.content);
    },
  );

  it('documents every config and pipeline field', () => {
    const undescribed: string[] = [];
    const walk = (node: Record<string, unknown>, at: string): void => {
      const properties = node.properties as Record<string, Record<string, unknown>> | undefined;
      for (const [key, child] of Object.entries(properties ?? {})) {
        if (typeof child.description !== 'string' || child.description === '')
          undescribed.push(`${at}${key}`);
        walk(child, `${at}${key}.`);
        const items = child.items as Record<string, unknown> | undefined;
        if (items) walk(items, `${at}${key}[].`);
      }
      for (const variant of (node.oneOf ?? []) as Record<string, unknown>[]) walk(variant, at);
    };
    for (const file of generatedFiles().filter((f) => f.path.endsWith('.json')))
      walk(JSON.parse(file.content), `${file.path}: `);
    expect(undescribed).toEqual([]);
  });

  it('lets an INGEST_CONFIG file set any one key alone (objects merge over the defaults)', () => {
    const config = JSON.parse(
      generatedFiles().find((f) => f.path === 'config/config.schema.json')!.content,
    );
    expect(config.required).toBeUndefined();
    expect(config.properties.http.required).toBeUndefined();
    expect(config.properties.tenants.items.required).toEqual(['businessId']);
    // A key hash is still required: one of apiKeyHash and apiKeyHashes (key rotation).
    expect(config.properties.tenants.items.anyOf).toEqual([
      { required: ['apiKeyHash'] },
      { required: ['apiKeyHashes'] },
    ]);
  });
});
