import { badRequest, quote } from './errors.ts';

/**
 * A parsed query string: bracketed names (`filters[0][*.fields.title][equal]=x`) become nested
 * objects, `name[]=` appends to an array. Objects have no prototype, so `__proto__` and
 * `constructor` are ordinary keys.
 */
export type QueryTree = { [key: string]: QueryValue };
type QueryValue = string | QueryValue[] | QueryTree;

const maxDepth = 12;
const maxParameters = 1000;

function decode(text: string, what: string): string {
  try {
    return decodeURIComponent(text.replaceAll('+', ' '));
  } catch {
    throw badRequest(`Malformed percent-encoding in query ${what} ${quote(text)}`);
  }
}

/** `filters[0][a.b][equal]` → `['filters', '0', 'a.b', 'equal']`; throws a 400 when the brackets do not balance. */
function splitName(name: string): string[] {
  const open = name.indexOf('[');
  if (open === -1) {
    if (name.includes(']')) throw badRequest(`Malformed query parameter name ${quote(name)}: "]" without "["`);
    return [name];
  }
  const parts = [name.slice(0, open)];
  if (parts[0] === '') throw badRequest(`Malformed query parameter name ${quote(name)}: it starts with "["`);
  let i = open;
  while (i < name.length) {
    if (name[i] !== '[') throw badRequest(`Malformed query parameter name ${quote(name)}: text after "]"`);
    const close = name.indexOf(']', i);
    if (close === -1) throw badRequest(`Malformed query parameter name ${quote(name)}: "[" without "]"`);
    const part = name.slice(i + 1, close);
    if (part.includes('[')) throw badRequest(`Malformed query parameter name ${quote(name)}: nested "["`);
    parts.push(part);
    i = close + 1;
  }
  if (parts.length > maxDepth)
    throw badRequest(`Query parameter ${quote(name)} is nested deeper than ${maxDepth} levels`);
  return parts;
}

function setPath(tree: QueryTree, parts: string[], value: string, name: string): void {
  let node: QueryTree | QueryValue[] = tree;
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    const last = i === parts.length - 1;
    if (Array.isArray(node)) {
      if (part !== '') throw badRequest(`Query parameter ${quote(name)} mixes "[]" with named keys`);
      if (last) node.push(value);
      else {
        const child: QueryTree = Object.create(null);
        node.push(child);
        node = child;
      }
      continue;
    }
    if (part === '' && i > 0) throw badRequest(`Query parameter ${quote(name)} has "[]" where a key was expected`);
    if (last) {
      if (typeof node[part] === 'object') {
        throw badRequest(`Query parameter ${quote(name)} is given both as a value and with brackets`);
      }
      node[part] = value; // a repeated plain parameter: the last one wins
      continue;
    }
    const wantArray = parts[i + 1] === '';
    let child: QueryValue | undefined = node[part];
    if (child === undefined) {
      child = wantArray ? [] : Object.create(null);
      node[part] = child!;
    } else if (typeof child === 'string' || Array.isArray(child) !== wantArray) {
      throw badRequest(`Query parameter ${quote(name)} conflicts with another parameter of the same name`);
    }
    node = child as QueryTree | QueryValue[];
  }
}

/** Parses a raw query string (without `?`); the `key` parameter is returned apart. */
export function parseQueryString(raw: string): { tree: QueryTree; key?: string } {
  const tree: QueryTree = Object.create(null);
  let key: string | undefined;
  if (raw === '') return { tree };
  const pairs = raw.split('&');
  if (pairs.length > maxParameters) throw badRequest(`Too many query parameters (more than ${maxParameters})`);
  for (const pair of pairs) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const name = decode(eq === -1 ? pair : pair.slice(0, eq), 'parameter name');
    const value = eq === -1 ? '' : decode(pair.slice(eq + 1), `value of ${quote(name)}:`);
    if (name === 'key') {
      key = value;
      continue;
    }
    setPath(tree, splitName(name), value, name);
  }
  return key === undefined ? { tree } : { tree, key };
}

/**
 * The query string with any `key=` parameter removed, for logs; the name is decoded as `parseQueryString` decodes it.
 */
export function redactKey(raw: string): string {
  const isKey = (pair: string): boolean => {
    const eq = pair.indexOf('=');
    try {
      return decode(eq === -1 ? pair : pair.slice(0, eq), 'parameter name') === 'key';
    } catch {
      return false;
    }
  };
  return raw
    .split('&')
    .filter((pair) => !isKey(pair))
    .join('&');
}
