import type { z } from 'zod';
import { defOf } from '../sync/option-keys.ts';

/**
 * Zod schemas of the kinds entries are made of, printed as TypeScript source: the types Astro's
 * `createSchema()` wants, and the declarations of the virtual modules (Astro's injected ones and
 * the file the Vite plugin writes).
 */

/** Prints a zod schema of the kinds used here as a TypeScript type. */
export function toTypeScript(schema: z.ZodType, indent = ''): string {
  const def = defOf(schema);
  const inner = `${indent}  `;
  switch (def.type) {
    case 'string':
    case 'number':
    case 'boolean':
    case 'unknown':
    case 'null':
      return def.type;
    case 'literal':
      return def.values!.map((v) => JSON.stringify(v)).join(' | ');
    case 'nullable':
      return `${toTypeScript(def.innerType!, indent)} | null`;
    case 'optional':
      return toTypeScript(def.innerType!, indent);
    case 'array':
      return `Array<${toTypeScript(def.element!, indent)}>`;
    case 'union':
      return def.options!.map((o) => `(${toTypeScript(o, indent)})`).join(' | ');
    case 'record':
      return `Record<string, ${toTypeScript(def.valueType!, indent)}>`;
    case 'object': {
      const lines = Object.entries(def.shape!).map(([key, value]) => {
        const optional = defOf(value).type === 'optional' ? '?' : '';
        return `${inner}${JSON.stringify(key)}${optional}: ${toTypeScript(value, inner)};`;
      });
      return `{\n${lines.join('\n')}\n${indent}}`;
    }
    default:
      return 'unknown';
  }
}
