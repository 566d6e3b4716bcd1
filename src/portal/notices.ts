import { LRUCache } from 'lru-cache';
import type { Notice } from './pages/layout.js';

/**
 * What a button's POST did, left for the page its 303 returns to and shown there once. Kept in
 * this instance's memory under the session: the redirect follows at once, to the same instance
 * on a keep-alive connection; on another, the page shows without it.
 */
export interface Notices {
  /** The outcome left under `key`, taken (shown once). */
  take(key: string): Notice | undefined;
  /** Leaves `notice` under `key` and answers 303 to `location`. */
  backTo(location: string, key: string, notice: Notice): Response;
}

/** An outcome waits this long for its page: a redirect follows at once. */
const NOTICE_TTL_MS = 5 * 60_000;

export function createNotices(): Notices {
  const notices = new LRUCache<string, Notice>({ max: 10_000, ttl: NOTICE_TTL_MS });
  return {
    take(key) {
      const notice = notices.get(key);
      notices.delete(key);
      return notice;
    },
    backTo(location, key, notice) {
      notices.set(key, notice);
      return new Response(null, {
        status: 303,
        headers: { location, 'cache-control': 'no-store' },
      });
    },
  };
}
