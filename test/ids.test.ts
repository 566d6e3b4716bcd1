import { describe, expect, it } from 'vitest';
import { timeOrderedId } from '../src/ids.js';

describe('timeOrderedId', () => {
  it('is a version 7 UUID with its millisecond time first', () => {
    const at = Date.parse('2026-11-26T17:30:00.123Z');
    const id = timeOrderedId(at);
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(Number.parseInt(id.replace(/-/g, '').slice(0, 12), 16)).toBe(at);
  });

  it('orders ids of later milliseconds after earlier ones, and never repeats', () => {
    const start = Date.now();
    const ids = Array.from({ length: 5000 }, (_, i) => timeOrderedId(start + Math.floor(i / 10)));
    expect(new Set(ids).size).toBe(ids.length);
    for (let i = 10; i < ids.length; i += 10) expect(ids[i - 1]! < ids[i]!).toBe(true);
  });
});
