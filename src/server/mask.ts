import { badRequest, quote } from './errors.ts';

/**
 * The `fields` partial-response mask (spec §8), in the json-mask style: `a,b` several keys,
 * `a/b` a path, `a(b,c)` sub-keys, `*` any key. A mask is a tree: key → `true` (keep all of
 * it) or a sub-mask.
 */
export type Mask = Map<string, Mask | true>;

const maxLength = 4096;
const maxDepth = 32;

export function parseMask(text: string): Mask {
  if (text.length > maxLength) throw badRequest(`Invalid fields mask: longer than ${maxLength} characters`);
  let i = 0;
  const fail = (problem: string): never => {
    throw badRequest(`Invalid fields mask ${quote(text)}: ${problem} at character ${i + 1}`);
  };
  const key = (): string => {
    const start = i;
    while (i < text.length && !',/()'.includes(text[i]!)) i++;
    const name = text.slice(start, i).trim();
    if (name === '') fail('a name is missing');
    return name;
  };
  const merge = (into: Mask, name: string, sub: Mask | true): void => {
    const existing = into.get(name);
    if (existing === undefined || sub === true || existing === true)
      into.set(name, existing === true || sub === true ? true : sub);
    else for (const [k, v] of sub) merge(existing, k, v);
  };
  const list = (depth: number): Mask => {
    if (depth > maxDepth) fail(`nested deeper than ${maxDepth} levels`);
    const mask: Mask = new Map();
    for (;;) {
      // path := key ('/' key)* ('(' list ')')?
      const names = [key()];
      while (text[i] === '/') {
        i++;
        names.push(key());
      }
      let leaf: Mask | true = true;
      if (text[i] === '(') {
        i++;
        leaf = list(depth + 1);
        if (text[i] !== ')') fail('")" expected');
        i++;
      }
      let sub: Mask | true = leaf;
      for (let n = names.length - 1; n > 0; n--) sub = new Map([[names[n]!, sub]]);
      merge(mask, names[0]!, sub);
      if (text[i] !== ',') break;
      i++;
    }
    return mask;
  };
  const mask = list(0);
  if (i !== text.length) fail(`unexpected ${quote(text[i])}`);
  return mask;
}

/** Applies a mask: arrays element by element, objects key by key; a sub-mask on a plain value drops it. */
export function applyMask(value: unknown, mask: Mask): unknown {
  if (Array.isArray(value)) return value.map((item) => applyMask(item, mask));
  if (typeof value !== 'object' || value === null) return undefined;
  const source = value as Record<string, unknown>;
  // A plain object, which JSON.stringify writes several times faster than one without a prototype;
  // a key named __proto__ is defined rather than assigned, so it stays a key.
  const out: Record<string, unknown> = {};
  const keep = (name: string, sub: Mask | true): void => {
    if (!Object.hasOwn(source, name)) return;
    const kept = sub === true ? source[name] : applyMask(source[name], sub);
    if (kept === undefined) return;
    if (name === '__proto__')
      Object.defineProperty(out, name, { value: kept, enumerable: true, writable: true, configurable: true });
    else out[name] = kept;
  };
  const any = mask.get('*');
  if (any !== undefined) for (const name of Object.keys(source)) keep(name, any);
  for (const [name, sub] of mask) if (name !== '*') keep(name, sub);
  return out;
}
