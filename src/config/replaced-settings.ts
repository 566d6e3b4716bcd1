/**
 * Settings that were replaced by others with another meaning: refused like any unknown key (a
 * silent fallback to a default is what the refusal prevents), but saying what to set instead.
 */
const REPLACED: Readonly<Record<string, string>> = {
  'http.abuse.authThrottle.maxFailuresPerAddress':
    'Replaced by maxBusinessIdsPerAddress: the per-address ceiling now counts the business ids failing from an address, not its failures (see docs/api.md#limits-and-abuse-protection)',
};

/** The message for an unknown key at `field` (a dotted path). */
export function unknownSettingMessage(field: string): string {
  return REPLACED[field] ?? 'Unknown setting (misspelt?)';
}
