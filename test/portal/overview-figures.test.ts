import { describe, expect, it } from 'vitest';
import { overviewDays, successRate, windowOf } from '../../src/portal/pages/overview-figures.js';

const NOW = Date.parse('2026-11-28T05:30:00.000Z');

describe("the overview's figures (pure)", () => {
  it('spans whole UTC days, today included', () => {
    expect(windowOf(NOW, 30)).toEqual({
      since: new Date('2026-10-30T00:00:00.000Z'),
      until: new Date('2026-11-29T00:00:00.000Z'),
    });
    expect(windowOf(NOW, 1)).toEqual({
      since: new Date('2026-11-28T00:00:00.000Z'),
      until: new Date('2026-11-29T00:00:00.000Z'),
    });
  });

  it('gives every day of the window, zeros included, accepted and refused apart', () => {
    const days = overviewDays(
      [
        { day: '2026-11-26', outcome: 'accepted', batches: 2, records: 20 },
        { day: '2026-11-26', outcome: 'duplicate', batches: 1, records: 3 },
        { day: '2026-11-28', outcome: 'rejected', batches: 1, records: 4 },
        { day: '2026-11-28', outcome: 'dead', batches: 2, records: 0 },
        { day: '2026-11-28', outcome: 'validated', batches: 1, records: 1 },
        // Outside the window: ignored.
        { day: '2026-11-20', outcome: 'accepted', batches: 9, records: 9 },
      ],
      NOW,
      3,
    );
    expect(days).toEqual([
      {
        day: '2026-11-26',
        acceptedBatches: 3,
        refusedBatches: 0,
        acceptedRecords: 23,
        refusedRecords: 0,
      },
      {
        day: '2026-11-27',
        acceptedBatches: 0,
        refusedBatches: 0,
        acceptedRecords: 0,
        refusedRecords: 0,
      },
      {
        day: '2026-11-28',
        acceptedBatches: 1,
        refusedBatches: 3,
        acceptedRecords: 1,
        refusedRecords: 4,
      },
    ]);
    expect(overviewDays([], NOW, 30)).toHaveLength(30);
  });

  it('says the success rate in words a person reads', () => {
    expect([successRate(0, 0), successRate(2, 6), successRate(1, 1), successRate(0, 3)]).toEqual([
      '—',
      '33.3 %',
      '100 %',
      '0 %',
    ]);
  });
});
