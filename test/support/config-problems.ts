import { expect } from 'vitest';
import { ConfigError, type ConfigProblem } from '../../src/operator-errors.js';

/** The problems a loader reports: `run` must throw a `ConfigError` (the test fails otherwise). */
export function problemsOf(run: () => unknown): readonly ConfigProblem[] {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems;
  }
  throw new Error('expected a ConfigError');
}
