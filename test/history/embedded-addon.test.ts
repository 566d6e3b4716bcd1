/**
 * `serve` refuses to start when the embedded history's SQLite addon does not load on this Node
 * line (issue 38, item 5): one problem naming the Node line and what to do. The release test
 * (test/release/release.test.ts) starts a real release whose addon does not load.
 */
import { describe, expect, it } from 'vitest';
import { embeddedAddonProblem } from '../../src/history/embedded/addon.js';
import { historyAddonProblems } from '../../src/start-up.js';

const WRONG_LINE = () => {
  throw new Error(
    "The module '/srv/release/node_modules/better-sqlite3/build/Release/better_sqlite3.node'\nwas compiled against a different Node.js version using\nNODE_MODULE_VERSION 115. This version of Node.js requires\nNODE_MODULE_VERSION 137.",
  );
};

describe('the embedded history’s addon at start-up', () => {
  it('names the Node line and what to do, in one line', () => {
    const problem = embeddedAddonProblem(WRONG_LINE);
    expect(problem).toContain(`does not load on Node ${process.version}`);
    expect(problem).toContain(`NODE_MODULE_VERSION ${process.versions.modules}`);
    expect(problem).toContain('npm rebuild better-sqlite3');
    expect(problem).toContain('the Node line it was built for');
    expect(problem).not.toContain('\n');
  });

  it('is a start-up problem only when the embedded history is on', () => {
    const history = { enabled: true } as Parameters<typeof historyAddonProblems>[0]['history'];
    const failing = () => embeddedAddonProblem(WRONG_LINE);
    expect(historyAddonProblems({ history }, failing)).toHaveLength(1);
    expect(historyAddonProblems({ history: { ...history, enabled: false } }, failing)).toEqual([]);
    expect(
      historyAddonProblems({ history: { ...history, url: 'postgres://h/db' } }, failing),
    ).toEqual([]);
    expect(historyAddonProblems({ history }, () => undefined)).toEqual([]);
  });
});
