import type { z } from 'zod';

/**
 * Zod schemas of the kinds entries are made of, printed as TypeScript source: the types Astro's
 * `createSchema()` wants, and the declarations of the virtual modules (Astro's injected ones and
 * the file the Vite plugin writes).
 */

/** Prints a zod schema of the kinds used here as a TypeScript type. */
export function toTypeScript(schema: z.ZodType, indent = ''): string {
  const def = (schema as unknown as { _zod: { def: Record<string, unknown> & { type: string } } })._zod.def;
  const inner = `${indent}  `;
  switch (def.type) {
    case 'string':
      return 'string';
    case 'number':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'unknown':
      return 'unknown';
    case 'null':
      return 'null';
    case 'literal':
      return (def.values as unknown[]).map((v) => JSON.stringify(v)).join(' | ');
    case 'nullable':
      return `${toTypeScript(def.innerType as z.ZodType, indent)} | null`;
    case 'optional':
      return toTypeScript(def.innerType as z.ZodType, indent);
    case 'array':
      return `Array<${toTypeScript(def.element as z.ZodType, indent)}>`;
    case 'union':
      return (def.options as z.ZodType[]).map((o) => `(${toTypeScript(o, indent)})`).join(' | ');
    case 'record':
      return `Record<string, ${toTypeScript(def.valueType as z.ZodType, indent)}>`;
    case 'object': {
      const shape = def.shape as Record<string, z.ZodType>;
      const lines = Object.entries(shape).map(([key, value]) => {
        const optional =
          (value as unknown as { _zod: { def: { type: string } } })._zod.def.type === 'optional' ? '?' : '';
        return `${inner}${JSON.stringify(key)}${optional}: ${toTypeScript(value, inner)};`;
      });
      return `{\n${lines.join('\n')}\n${indent}}`;
    }
    default:
      return 'unknown';
  }
}
