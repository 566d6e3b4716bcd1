/**
 * ops/alerts.yaml evaluated by Prometheus's own rule engine: `promtool test rules` runs
 * ops/alerts.test.yaml (series in, alerts out), and every rule must be tested there both firing
 * and staying silent. promtool comes with Debian's `prometheus` package (scripts/ensure-services.sh).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const OPS = new URL('../../ops/', import.meta.url).pathname;

interface RulesTest {
  rule_files: string[];
  tests: Array<{
    name: string;
    alert_rule_test?: Array<{ alertname: string; exp_alerts?: unknown[] | null }>;
  }>;
}

const rules = (
  parse(readFileSync(`${OPS}alerts.yaml`, 'utf8')) as {
    groups: Array<{ rules: Array<{ alert: string }> }>;
  }
).groups.flatMap((g) => g.rules.map((r) => r.alert));
const unitTests = parse(readFileSync(`${OPS}alerts.test.yaml`, 'utf8')) as RulesTest;

function promtool(...args: string[]): { status: number | null; output: string } {
  const run = spawnSync('promtool', args, { cwd: OPS, encoding: 'utf8', timeout: 60_000 });
  if (run.error && (run.error as NodeJS.ErrnoException).code === 'ENOENT')
    throw new Error(
      'promtool is not installed: run `npm test` (scripts/ensure-services.sh installs it) or `apt-get install -y prometheus`.',
    );
  if (run.error) throw run.error;
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

describe('ops/alerts.yaml under promtool', () => {
  it('is valid for Prometheus (promtool check rules)', () => {
    const { status, output } = promtool('check', 'rules', 'alerts.yaml');
    expect(output).toContain(`SUCCESS: ${rules.length} rules found`);
    expect(status, output).toBe(0);
  });

  it('passes its unit tests (promtool test rules ops/alerts.test.yaml)', () => {
    expect(unitTests.rule_files).toEqual(['alerts.yaml']);
    const { status, output } = promtool('test', 'rules', 'alerts.test.yaml');
    expect(output).toContain('SUCCESS');
    expect(status, output).toBe(0);
  });

  it('tests every rule both firing and silent', () => {
    const checks = unitTests.tests.flatMap((t) => t.alert_rule_test ?? []);
    const firing = new Set(
      checks.filter((c) => (c.exp_alerts ?? []).length > 0).map((c) => c.alertname),
    );
    const silent = new Set(
      checks.filter((c) => (c.exp_alerts ?? []).length === 0).map((c) => c.alertname),
    );
    expect(
      rules.filter((rule) => !firing.has(rule)),
      'rules never seen firing',
    ).toEqual([]);
    expect(
      rules.filter((rule) => !silent.has(rule)),
      'rules never seen silent',
    ).toEqual([]);
    // A test of a rule that is not there tests nothing.
    expect([...firing, ...silent].filter((name) => !rules.includes(name))).toEqual([]);
  });

  it('has an alert for the service itself being down or not scraped at all', () => {
    const text = readFileSync(`${OPS}alerts.yaml`, 'utf8');
    expect(text).toContain('up{job="warehouse-ingest"} == 0');
    expect(text).toContain('absent(up{job="warehouse-ingest"})');
  });
});
