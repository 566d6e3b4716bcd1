/**
 * Legacy dates (`DueOutDate`, `ExpDelDate`, `CreatedDate`) to v2 UTC timestamps.
 *
 * Accepted forms (docs/legacy-v1.md#legacy-dates):
 *   2026-02-03                      → 2026-02-03T00:00:00Z (a date is midnight UTC)
 *   2026-02-03T14:30[:05[.123]]     → taken as UTC (the legacy systems sent no zone)
 *   2026-02-03 14:30[:05[.123]]     → the same with a space
 *   2026-02-03T14:30:05[.123]Z      → unchanged
 *   2026-02-03T14:30:05[.123]+01:00 → converted to UTC
 * Day-first or month-first forms (03/02/2026) are refused: they are ambiguous.
 */
const LEGACY_DATE =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

export const LEGACY_DATE_FORMS =
  'YYYY-MM-DD or an ISO 8601 date-time, e.g. 2026-02-03 or 2026-02-03T14:30:00Z';

/** The v2 timestamp, or undefined when the text is not one of the accepted forms or not a real date. */
export function legacyDateToUtc(text: string): string | undefined {
  const m = LEGACY_DATE.exec(text.trim());
  if (!m) return undefined;
  const [, y, mo, d, h = '00', mi = '00', s = '00', fraction, zone] = m;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const hour = Number(h);
  const minute = Number(mi);
  const second = Number(s);
  if (
    month < 1 ||
    month > 12 ||
    day < 1 ||
    day > daysIn(year, month) ||
    hour > 23 ||
    minute > 59 ||
    second > 59
  )
    return undefined;
  let ms = Date.UTC(
    year,
    month - 1,
    day,
    hour,
    minute,
    second,
    fraction ? Number(fraction.slice(0, 3).padEnd(3, '0')) : 0,
  );
  if (zone && zone !== 'Z') {
    const sign = zone[0] === '-' ? -1 : 1;
    const digits = zone.slice(1).replace(':', '');
    const offsetMinutes = Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2));
    if (Number(digits.slice(2)) > 59 || offsetMinutes > 14 * 60) return undefined;
    ms -= sign * offsetMinutes * 60_000;
  }
  const iso = new Date(ms).toISOString();
  // Keep whole-second timestamps short (…T14:30:00Z), as v2 senders write them.
  return fraction ? iso : `${iso.slice(0, 19)}Z`;
}

function daysIn(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}
