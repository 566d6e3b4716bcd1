import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { serializeReceipt, type Receipt } from '../../src/drops/receipts.js';
import { openIdFile, writeReceiptFile } from '../../src/drops/receipts.js';
import { tempFolder } from '../support/temp.js';

const temp = tempFolder('receipt-file-');
const receipt = (messageIds: string[]): Receipt => ({
  outcome: 'accepted',
  response: { success: true, recordCount: messageIds.length, messageIds, correlationId: 'c-1' },
  pipeline: 'acme-orders',
  businessId: 'ACME',
  kind: 'sales-orders',
  format: 'v1-csv',
  environment: 'production',
  file: { name: 'orders "1".csv', size: 10, sha256: 'ab', source: 'local:/drop' },
  receivedAt: '2026-01-01T00:00:00.000Z',
  processedAt: '2026-01-01T00:00:01.000Z',
  attempt: 1,
});

describe('receipt files', () => {
  it('stream the message ids from a file into exactly the receipt serializeReceipt would write', async () => {
    const ids = Array.from(
      { length: 25_000 },
      (_, i) => `00000000-0000-8000-8000-${String(i).padStart(12, '0')}`,
    );
    const idFile = openIdFile(path.join(temp.dir, 'ids'));
    for (let i = 0; i < ids.length; i += 1000) await idFile.append(ids.slice(i, i + 1000));
    await idFile.end();
    const out = path.join(temp.dir, 'receipt.json');
    const whole = receipt(ids);
    await writeReceiptFile(
      out,
      { ...whole, response: { ...whole.response, messageIds: [] } },
      idFile.path,
    );
    expect(readFileSync(out, 'utf8')).toBe(serializeReceipt(whole));
  });

  it('write a receipt without ids (a rejection) as it is', async () => {
    const out = path.join(temp.dir, 'rejected.json');
    const rejected: Receipt = {
      ...receipt([]),
      outcome: 'rejected',
      response: {
        type: 'about:blank',
        title: 'Bad Request',
        status: 400,
        errors: [{ index: 0, errors: ['x: Required'] }],
      },
    };
    await writeReceiptFile(out, rejected);
    expect(JSON.parse(readFileSync(out, 'utf8'))).toEqual(rejected);
  });

  it('handle a single id', async () => {
    writeFileSync(path.join(temp.dir, 'one'), 'only-id\n');
    const out = path.join(temp.dir, 'one.json');
    await writeReceiptFile(out, receipt([]), path.join(temp.dir, 'one'));
    expect(JSON.parse(readFileSync(out, 'utf8')).response.messageIds).toEqual(['only-id']);
  });
});
