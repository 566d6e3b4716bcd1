import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * docs/testing.md: tests wait on conditions, not the clock. A promise that only resolves after a
 * fixed time over 100 ms is a sleep; files on a fake clock (`vi.useFakeTimers`) wait on nothing.
 */
const TEST = new URL('..', import.meta.url).pathname;

function testFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return testFiles(full);
    return name.endsWith('.ts') ? [full] : [];
  });
}

const SLEEP = /setTimeout\(\s*(?:resolve|r|res|done)\s*,\s*([0-9_]+)\s*\)/g;

describe('test rules', () => {
  it('has no fixed sleep over 100 ms outside a fake clock', () => {
    const sleeps: string[] = [];
    for (const file of testFiles(TEST)) {
      const text = readFileSync(file, 'utf8');
      if (text.includes('vi.useFakeTimers(')) continue;
      for (const match of text.matchAll(SLEEP)) {
        const ms = Number(match[1]!.replaceAll('_', ''));
        if (ms > 100) sleeps.push(`${path.relative(TEST, file)}: ${match[0]}`);
      }
    }
    expect(sleeps).toEqual([]);
  });
});
