import { describe, expect, it } from 'vitest';
import { digest, fingerprintOf } from '../src/model/digests.ts';

// Caches hold record digests and fingerprints of options, and Astro's store the fingerprints of
// loaders: the one helper that makes them all must give what the four it replaced gave, or every
// cache would be rebuilt and every page made again once.
describe('digests and fingerprints are the ones caches and stores hold', () => {
  it("a record's digest: 22 characters of base64url sha1 of its JSON", () => {
    expect(digest('{"id":"1"}')).toBe('g8XH0Dum5CMsI43ax61J3a');
  });

  it('a fingerprint of options: 20 characters of base64url sha1 of their JSON, or of a text as it is', () => {
    const options = { baseUrl: 'https://api.cmft.io', repository: 'demo', package: '0.1.0' };
    expect(fingerprintOf(options)).toBe('oMz5tiwgHhnUqSM76t1W');
    expect(fingerprintOf(JSON.stringify(options))).toBe('oMz5tiwgHhnUqSM76t1W');
    expect(fingerprintOf('src/content.config.ts\u0000export const collections = {};')).toBe('bNi45DeOf0eT9h8Eji_8');
  });
});
