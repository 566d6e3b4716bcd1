import { describe, expect, it } from 'vitest';
import {
  barChart,
  type ChartDay,
  labelledDays,
  niceMax,
  shortDay,
} from '../../src/portal/pages/overview-chart.js';

/** The chart's bars as numbers: each day's accepted and refused rectangles by their heights. */
function bars(svg: string) {
  const read = (kind: string) =>
    [
      ...svg.matchAll(
        new RegExp(
          `<rect class="bar ${kind}" x="([\\d.]+)" y="([\\d.]+)" width="([\\d.]+)" height="([\\d.]+)"`,
          'g',
        ),
      ),
    ].map((m) => ({ x: Number(m[1]), y: Number(m[2]), width: Number(m[3]), height: Number(m[4]) }));
  return { accepted: read('accepted'), refused: read('refused') };
}

const day = (n: number, accepted: number, refused: number): ChartDay => ({
  day: `2026-11-${String(n).padStart(2, '0')}`,
  accepted,
  refused,
});

const chart = (days: ChartDay[]) =>
  barChart({ id: 'batches', title: 'Batches per day', unit: 'batches', days }).text;

describe('the overview bar chart (pure SVG)', () => {
  it('draws bars proportional to the figures, refused stacked on accepted', () => {
    const svg = chart([day(1, 10, 0), day(2, 20, 5), day(3, 40, 20)]);
    const { accepted, refused } = bars(svg);
    expect(accepted).toHaveLength(3);
    expect(refused).toHaveLength(2);
    const unit = accepted[0]!.height / 10;
    expect(accepted[1]!.height).toBeCloseTo(unit * 20, 1);
    expect(accepted[2]!.height).toBeCloseTo(unit * 40, 1);
    expect(refused[0]!.height).toBeCloseTo(unit * 5, 1);
    expect(refused[1]!.height).toBeCloseTo(unit * 20, 1);
    // Each refused part sits right on top of its day's accepted part.
    expect(refused[1]!.y + refused[1]!.height).toBeCloseTo(accepted[2]!.y, 1);
    // The tallest bar (60) stays inside the scale's top (niceMax(60) = 60).
    expect(niceMax(60)).toBe(60);
    expect(svg).toContain('>60</text>');
  });

  it('says what it shows in words: title, totals, legend, each bar’s figures, day labels', () => {
    const svg = chart([day(27, 1200, 3), day(28, 7, 0)]);
    expect(svg).toContain('role="img"');
    expect(svg).toContain('aria-labelledby="batches-title batches-desc"');
    expect(svg).toContain('<title id="batches-title">Batches per day</title>');
    expect(svg).toContain(
      'Batches per day, 2026-11-27 to 2026-11-28 (UTC): 1,207 batches accepted and 3 refused in all.',
    );
    expect(svg).toContain('<title>Nov 27 (2026-11-27): 1,200 accepted, 3 refused</title>');
    expect(svg).toContain('Accepted (solid)');
    expect(svg).toContain('Refused (hatched)');
    expect(svg).toContain('fill="url(#batches-hatch)"');
    expect(svg).toMatch(/>Nov 27<\/text>[\s\S]*>Nov 28<\/text>/);
  });

  it('draws an empty chart with its axis and a sentence, no bars, when nothing came', () => {
    const svg = chart([day(1, 0, 0), day(2, 0, 0)]);
    expect(bars(svg)).toEqual({ accepted: [], refused: [] });
    expect(svg).toContain('No batches in these days');
    expect(svg).toContain('0 batches accepted and 0 refused in all');
    expect(chart([])).toContain('No batches in these days');
  });

  it('draws one day as one bar of bounded width, labelled', () => {
    const svg = chart([day(28, 3, 1)]);
    const { accepted, refused } = bars(svg);
    expect(accepted).toHaveLength(1);
    expect(refused).toHaveLength(1);
    expect(accepted[0]!.width).toBeLessThanOrEqual(48);
    expect(svg).toContain('>Nov 28</text>');
    expect(svg).toContain('Batches per day, 2026-11-28 (UTC)');
  });

  it('draws 30 days as 30 bars, evenly spaced, labelling every third day back from the last', () => {
    const days = Array.from({ length: 30 }, (_, i) => day(i + 1, i, i % 2));
    const svg = chart(days);
    const { accepted } = bars(svg);
    expect(accepted).toHaveLength(29); // day 1 has none
    const gaps = accepted.slice(1).map((bar, i) => bar.x - accepted[i]!.x);
    for (const gap of gaps) expect(gap).toBeCloseTo(gaps[0]!, 1);
    expect(labelledDays(30)).toEqual(new Set([29, 26, 23, 20, 17, 14, 11, 8, 5, 2]));
    expect(svg).toContain('>Nov 30</text>');
    expect(svg).not.toContain('>Nov 29</text>');
    expect(svg).toContain('<title>Nov 29 (2026-11-29): 28 accepted, 0 refused</title>');
  });

  it('escapes what it is given, and rounds its scale to whole steps', () => {
    const svg = barChart({
      id: 'x',
      title: '<script>',
      unit: 'records',
      days: [day(1, 5, 0)],
    }).text;
    expect(svg).not.toContain('<script>');
    expect(svg).toContain('&lt;script&gt;');
    expect([niceMax(0), niceMax(7), niceMax(1234), niceMax(100_000)]).toEqual([
      4, 8, 1600, 100_000,
    ]);
    expect(shortDay('2026-01-05')).toBe('Jan 5');
  });
});
