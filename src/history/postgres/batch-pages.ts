/**
 * Batches page by page, newest first, for the partner API and the portal: keyset pagination on
 * (`at`, `id`), so a page costs the same at the millionth batch as at the first and batches
 * written meanwhile neither repeat nor shift a page. Filters are all optional, each a condition
 * that is true when its parameter is null (one statement, one plan).
 */
import type { BatchCursor, BatchFilter, BatchPage, Scope } from '../store.js';
import type { SqlQuery } from './client.js';
import { type BatchDbRow, batchPage, scoped, toBatch } from '../rows.js';

export async function listBatches(
  db: SqlQuery,
  scope: Scope,
  filter: BatchFilter,
  page: { readonly limit: number; readonly after?: BatchCursor },
): Promise<BatchPage> {
  const rows = await db.query<BatchDbRow>(
    `select * from history_batches b
     where ($1::text is null or b.business_id = $1)
       and ($2::timestamptz is null or b.at >= $2)
       and ($3::timestamptz is null or b.at < $3)
       and ($4::text is null or b.outcome = $4)
       and ($5::text is null or b.kind = $5)
       and ($6::text is null or b.endpoint = $6 or b.pipeline = $6)
       and ($7::timestamptz is null or (b.at, b.id) < ($7, $8::uuid))
     order by b.at desc, b.id desc
     limit $9`,
    [
      scoped(scope),
      filter.since?.toISOString() ?? null,
      filter.until?.toISOString() ?? null,
      filter.outcome ?? null,
      filter.kind ?? null,
      filter.source ?? null,
      page.after?.at.toISOString() ?? null,
      page.after?.id ?? null,
      page.limit + 1,
    ],
  );
  return batchPage(rows.map(toBatch), page.limit);
}
