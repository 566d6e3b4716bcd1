/**
 * Legacy fields a business's onboarding profile says to ignore (`legacy.unknownFields: ignore`):
 * partners migrating from a previous vendor send what their old system sent. The names are
 * listed in the answer (`ignoredFields`) and logged once per business, kind and name.
 */

/** Distinct names listed per batch: a hostile input with a thousand invented keys lists this many. */
export const MAX_LISTED_IGNORED = 100;

/** Names remembered as logged, per process; beyond this a name is not logged again (memory stays bounded). */
const MAX_LOGGED = 10_000;
const logged = new Set<string>();

export class IgnoredFields {
  private readonly names = new Set<string>();

  add(name: string): void {
    if (this.names.size < MAX_LISTED_IGNORED) this.names.add(name.slice(0, 200));
  }

  get size(): number {
    return this.names.size;
  }

  /** The names in the order first seen (at most `MAX_LISTED_IGNORED`). */
  list(): string[] {
    return [...this.names];
  }

  /** Logs (at info) the names not logged before for this business and kind. */
  logNew(
    log: { info(fields: object, message: string): void },
    businessId: string,
    kind: string,
  ): void {
    const fresh = [...this.names].filter((name) => {
      const key = `${businessId}\u0000${kind}\u0000${name}`;
      if (logged.has(key) || logged.size >= MAX_LOGGED) return false;
      logged.add(key);
      return true;
    });
    if (fresh.length > 0)
      log.info(
        { ignoredFields: fresh },
        'legacy fields ignored, as the onboarding profile says (logged once per field name)',
      );
  }
}
