import { hash } from 'node:crypto';

/**
 * Short digests, base64url sha1. Two lengths, for what caches and stores already hold: a
 * digest (of a record's JSON, of the text a page key is made of) has 22 characters, a
 * fingerprint (of options: when it changes, what they made is made again) 20.
 */

const sha1 = (text: string, chars: number): string => hash('sha1', text, 'base64url').slice(0, chars);

export const digest = (text: string): string => sha1(text, 22);

/** The fingerprint of a text, or of a value's JSON. */
export const fingerprintOf = (value: unknown): string =>
  sha1(typeof value === 'string' ? value : JSON.stringify(value), 20);
