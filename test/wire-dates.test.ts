import { describe, expect, it } from 'vitest';
import { kindOfValue } from '../src/model/shapes.ts';
import { isoDatePattern, isUtcDate, timestampPattern } from '../src/wire/snapshot-format.ts';

// Five regular expressions told dates apart before they became the three rules of
// wire/snapshot-format.ts. Each old one is written here as it was, so that the table shows the
// one rule accepting and refusing what the old ones did wherever they agreed.
const old = {
  /** model/shapes.ts: a value the model reads as a date. */
  modelDate: /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/,
  /** server/values.ts: a date filter's value. */
  serverDate: /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/,
  /** wire/snapshot-format.ts: a date field's value in a snapshot. */
  snapshotDate: /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?Z)?$/,
  /** wire/snapshot-format.ts and pull/records.ts: a record's createdAt and updatedAt. */
  timestamp: /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z$/,
};

const samples = [
  '2024-01-31',
  '2024-01-31T12:00',
  '2024-01-31T12:00Z',
  '2024-01-31T12:00:00',
  '2024-01-31T12:00:00Z',
  '2024-01-31T12:00:00.1Z',
  '2024-01-31T12:00:00.123Z',
  '2024-01-31T12:00:00.1234Z',
  '2024-01-31T12:00:00.123456789Z',
  '2024-01-31T12:00:00+02:00',
  '2024-01-31T12:00:00+0200',
  '2024-01-31T12:00:00.5-05:00',
  '2024-01-31T12:00+02:00',
  '2024-01-31Z',
  '2024-1-31',
  '2024-01-31T12',
  '2024-01-31 12:00:00',
  '2024-01-31T12:00:00.Z',
  '2024-01-31T12:00:00ZZ',
  '20240131',
  ' 2024-01-31',
  '2024-01-31\n',
  '',
];

describe('one rule for what reads as a date', () => {
  it.each(samples)('%j: as the model and the server read it before', (sample) => {
    expect(old.modelDate.test(sample)).toBe(old.serverDate.test(sample));
    expect(isoDatePattern.test(sample)).toBe(old.serverDate.test(sample));
  });

  it.each(samples)("%j: as a snapshot's date field before", (sample) => {
    expect(isUtcDate(sample)).toBe(old.snapshotDate.test(sample));
  });

  it.each(samples)("%j: as a record's timestamp before", (sample) => {
    expect(timestampPattern.test(sample)).toBe(old.timestamp.test(sample));
  });

  it('a date with a time in UTC is read as a date by each rule; an offset only where no snapshot is written', () => {
    expect(isUtcDate('2024-01-31T12:00:00.123Z')).toBe(true);
    expect(timestampPattern.test('2024-01-31T12:00:00.123Z')).toBe(true);
    expect(isoDatePattern.test('2024-01-31T12:00:00+02:00')).toBe(true);
    expect(isUtcDate('2024-01-31T12:00:00+02:00')).toBe(false);
    expect(kindOfValue('2024-01-31T12:00:00+02:00')).toBe('date');
  });

  // Where they disagreed: the model took any number of digits after the second's point, the
  // server and the snapshot at most nine (nanoseconds). The one rule takes nine, so a value the
  // model calls a date is one the server filters as a date and `pull` can write as one.
  it('more than nine digits of a second are no date (the model took them before)', () => {
    const tooFine = '2024-01-31T12:00:00.1234567890Z';
    expect(old.modelDate.test(tooFine)).toBe(true);
    expect(old.serverDate.test(tooFine)).toBe(false);
    expect(isoDatePattern.test(tooFine)).toBe(false);
    expect(kindOfValue(tooFine)).toBe('text');
    expect(kindOfValue('2024-01-31T12:00:00.123456789Z')).toBe('date');
  });
});
