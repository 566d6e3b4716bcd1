import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const ROOT = new URL('../..', import.meta.url).pathname;
const read = (file: string) => readFileSync(`${ROOT}/${file}`, 'utf8');

describe('the production start command', () => {
  it("is the same in package.json's start script (the release folder copies it) and the image's CMD", () => {
    const start = (JSON.parse(read('package.json')) as { scripts: { start: string } }).scripts
      .start;
    const cmd = /^CMD (\[.*\])$/m.exec(read('Dockerfile'))?.[1];
    expect(cmd, 'a CMD in exec form').toBeDefined();
    expect(JSON.parse(cmd!) as string[]).toEqual(start.split(' '));
  });

  it('runs serve with the young generation the performance docs measured (32 MiB semi-spaces)', () => {
    const start = (JSON.parse(read('package.json')) as { scripts: { start: string } }).scripts
      .start;
    expect(start).toBe('node --max-semi-space-size=32 dist/cli.js serve');
  });
});
