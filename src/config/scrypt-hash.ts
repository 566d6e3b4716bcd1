import { z } from 'zod';
import { API_KEY_HASH_PATTERN, parseApiKeyHash } from '../api-keys.js';

/**
 * One scrypt hash as `hash-key` prints it, whole: a hash cut short would lock its holder out
 * silently. Shared by the tenants' API keys and the portal operators' passwords.
 */
export const scryptHashSchema = z
  .string()
  .regex(API_KEY_HASH_PATTERN, {
    message: "Expected a scrypt hash printed by 'warehouse-ingest hash-key'",
    abort: true,
  })
  .refine((hash) => parseApiKeyHash(hash) !== undefined, {
    message:
      "Not a whole scrypt hash as 'warehouse-ingest hash-key' prints it (cut short or altered?): cost ln 10–20, r 1–16, p 1–4, a salt of 8+ bytes and a 32-byte hash, both in canonical base64. Hash the key again and paste the whole line.",
  });
