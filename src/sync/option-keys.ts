import type { z } from 'zod';

/**
 * The keys an options schema allows at a path, and the one nearest a misspelt key, so that an
 * unknown option is answered with "did you mean …?" wherever options are checked (the
 * integration, a loader, its request options, the Vite plugin).
 */

/** What a zod schema says of itself (its `def`), as far as the code reading it here, in entries/typescript.ts and in the types command needs. */
type Def = {
  type: string;
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  valueType?: z.ZodType;
  options?: z.ZodType[];
  getter?: () => z.ZodType;
  in?: z.ZodType;
  element?: z.ZodType;
  values?: unknown[];
  discriminator?: string;
};

export const defOf = (schema: z.ZodType) => (schema as unknown as { def: Def }).def;

/** The object schemas a value at `path` may match (several under a union). */
function objectsAt(schema: z.ZodType, path: readonly PropertyKey[]): Def[] {
  const def = defOf(schema);
  switch (def.type) {
    case 'optional':
    case 'nullable':
    case 'default':
    case 'prefault':
    case 'readonly':
    case 'nonoptional':
      return objectsAt(def.innerType!, path);
    case 'lazy':
      return objectsAt(def.getter!(), path);
    case 'pipe':
      return objectsAt(def.in!, path);
    case 'union':
      return def.options!.flatMap((option) => objectsAt(option, path));
    default:
      break;
  }
  if (path.length === 0) return def.type === 'object' ? [def] : [];
  const [head, ...rest] = path;
  if (def.type === 'object') {
    const field = def.shape![String(head)];
    return field ? objectsAt(field, rest) : [];
  }
  if (def.type === 'record') return objectsAt(def.valueType!, rest);
  if (def.type === 'array') return objectsAt(def.element!, rest);
  return [];
}

/** The keys allowed at `path` of `schema` (the object an unknown key was found in), in the schema's order. */
export function allowedKeys(schema: z.ZodType, path: readonly PropertyKey[]): string[] {
  return [...new Set(objectsAt(schema, path).flatMap((def) => Object.keys(def.shape ?? {})))];
}

/** Edit distance with transpositions (optimal string alignment), case ignored. */
function distance(a: string, b: string): number {
  const s = a.toLowerCase();
  const t = b.toLowerCase();
  const rows = Array.from({ length: s.length + 1 }, (_, i) => [i, ...Array<number>(t.length).fill(0)]);
  for (let j = 1; j <= t.length; j++) rows[0]![j] = j;
  for (let i = 1; i <= s.length; i++) {
    for (let j = 1; j <= t.length; j++) {
      const cost = s[i - 1] === t[j - 1] ? 0 : 1;
      let best = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && s[i - 1] === t[j - 2] && s[i - 2] === t[j - 1])
        best = Math.min(best, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = best;
    }
  }
  return rows[s.length]![t.length]!;
}

/**
 * The allowed key nearest `key`: at most two edits away (one for keys of four letters or
 * fewer), or one that starts with it or that it starts with (`content` → `contentType`).
 */
export function nearestKey(key: string, allowed: readonly string[]): string | undefined {
  let best: { key: string; score: number } | undefined;
  for (const candidate of allowed) {
    const edits = distance(key, candidate);
    const prefix =
      key.length >= 4 &&
      (candidate.toLowerCase().startsWith(key.toLowerCase()) || key.toLowerCase().startsWith(candidate.toLowerCase()));
    const limit = Math.min(key.length, candidate.length) <= 4 ? 1 : 2;
    const score = edits <= limit ? edits : prefix ? limit + 0.5 : Number.POSITIVE_INFINITY;
    if (score < (best?.score ?? Number.POSITIVE_INFINITY)) best = { key: candidate, score };
  }
  return best?.key;
}
