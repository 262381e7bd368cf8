import { describe, expect, it } from 'vitest';
import { fastMaskedListAnswerSchema } from '../src/api/client.ts';
import { maskedListAnswerSchema } from '../src/wire/schemas.ts';
import { Random } from './helpers/random.ts';

/**
 * The client checks the masked listings a sync reads its stamps from by hand (src/api/client.ts), for speed; the wire
 * schema is the rule. Drawn pages, right and wrong one value at a time: the hand check accepts exactly what the wire
 * schema accepts, keeps what it keeps, and names the same first place when it refuses.
 */

const values = [undefined, null, 0, 7, -1.5, '', 'x', '2026-11-27T00:00:00.000Z', true, [], ['a'], [1], {}, { a: 1 }];
const metaKeys = ['id', 'contentType', 'repository', 'revision', 'createdAt', 'updatedAt', 'tags', 'extra'];

function drawRecord(random: Random): unknown {
  if (random.chance(0.03)) return random.pick(values);
  const record: Record<string, unknown> = {};
  if (random.chance(0.8)) {
    const meta: Record<string, unknown> = { id: String(random.int(1, 99)), updatedAt: '2026-11-27T00:00:00.000Z' };
    if (random.chance(0.7)) meta.revision = random.int(1, 9);
    if (random.chance(0.3)) meta.tags = random.some(['a', 'b', 'c'], 2);
    if (random.chance(0.15)) meta[random.pick(metaKeys)] = random.pick(values);
    record.meta = random.chance(0.03) ? random.pick(values) : meta;
  }
  if (random.chance(0.3)) record.fields = random.chance(0.1) ? random.pick(values) : { title: 'Soup' };
  if (random.chance(0.05)) record.other = random.pick(values);
  return record;
}

function drawPage(random: Random): unknown {
  const data = Array.from({ length: random.int(0, 6) }, () => drawRecord(random));
  const page: Record<string, unknown> = {
    status: 200,
    meta: { count: data.length, limit: 6, offset: 0, total: data.length },
    data: random.chance(0.03) ? random.pick(values) : data,
  };
  if (random.chance(0.05)) delete page.meta;
  if (random.chance(0.1)) page.includes = { author: [drawRecord(random)] };
  return page;
}

describe('the hand check of masked listings', () => {
  it('agrees with the wire schema on 5,000 drawn pages', () => {
    const random = new Random(29);
    let refused = 0;
    for (let n = 0; n < 5000; n++) {
      const page = drawPage(random);
      const wire = maskedListAnswerSchema.safeParse(page);
      const fast = fastMaskedListAnswerSchema.safeParse(page);
      expect(fast.success, JSON.stringify(page)).toBe(wire.success);
      if (wire.success) expect(fast.data).toEqual(wire.data);
      else {
        refused++;
        expect(fast.error!.issues[0]!.path).toEqual(wire.error.issues[0]!.path);
      }
    }
    // Both ways are walked often.
    expect(refused).toBeGreaterThan(500);
    expect(refused).toBeLessThan(4500);
  });

  it('keeps the records of a right page as they were sent', () => {
    const page = { meta: { count: 1, limit: 1, offset: 0, total: 1 }, data: [{ meta: { id: '1', revision: 2 } }] };
    const answer = fastMaskedListAnswerSchema.parse(page);
    expect(answer.data[0]).toBe(page.data[0]);
  });
});
