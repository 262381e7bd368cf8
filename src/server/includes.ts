import { isObject } from '../wire/schemas.ts';
import { badRequest, quote, sectionHint } from './errors.ts';
import type { LocaleView, PreparedRecord, PreparedRepository } from './prepared-repository.ts';

/**
 * Includes (spec §6): the records that answered records reference, grouped by the name of the
 * referencing field. Within a group each record stands once, in the order first reached
 * (breadth first; per record, fields in content-type order). Dangling references are skipped.
 */

const maxIncludeDepth = 5;
/** Fields named in one field map, at all its levels together: far beyond any content model (spec §9). */
const maxIncludeFields = 1_000;

interface IncludeNode {
  contentType: string; // '*' for any
  field: string;
  children: IncludeNode[];
}
/** A level (every reference field, n levels deep) or a field map. */
export type IncludePlan = { level: number } | { fields: IncludeNode[] };

export function parseIncludes(value: unknown): IncludePlan | undefined {
  if (typeof value === 'number' || typeof value === 'string') {
    const level = typeof value === 'number' ? value : /^\s*-?\d+\s*$/.test(value) ? Number(value) : NaN;
    if (!Number.isInteger(level) || level < 0 || level > maxIncludeDepth) {
      throw badRequest(
        `Invalid includes ${quote(value)}: expected a level from 0 to ${maxIncludeDepth}, ` +
          'or fields such as includes[*.fields.author]=1',
      );
    }
    return level === 0 ? undefined : { level };
  }
  if (isObject(value)) return { fields: parseFieldMap(value, 1, { left: maxIncludeFields }) };
  throw badRequest(`Invalid includes ${quote(value)}: expected a level from 0 to ${maxIncludeDepth} or a field map`);
}

function parseFieldMap(map: Record<string, unknown>, depth: number, budget: { left: number }): IncludeNode[] {
  if (depth > maxIncludeDepth) throw badRequest(`Invalid includes: nested deeper than ${maxIncludeDepth} levels`);
  const entries = Object.entries(map);
  if (entries.length === 0) throw badRequest('Invalid includes: an empty field map');
  budget.left -= entries.length;
  if (budget.left < 0) throw badRequest(`Invalid includes: more than ${maxIncludeFields} fields in the field map`);
  return entries.map(([path, child]) => {
    const match = /^([^.]+)\.fields\.([^.]+)$/.exec(path);
    if (!match) {
      throw badRequest(
        `Malformed includes path ${quote(path)}: expected <contentType|*>.fields.<name>, ` +
          `such as *.fields.author${sectionHint(path, true)}`,
      );
    }
    let children: IncludeNode[] = [];
    if (isObject(child)) children = parseFieldMap(child, depth + 1, budget);
    else if (!(child === 1 || child === '1' || child === true || child === 'true')) {
      throw badRequest(`Invalid includes value ${quote(child)} for ${quote(path)}: expected 1 or a nested field map`);
    }
    return { contentType: match[1]!, field: match[2]!, children };
  });
}

/** Collects the included records for the answered ones; asset fields count only without embedAssets. */
export function collectIncludes(
  repository: PreparedRepository,
  answered: PreparedRecord[],
  plan: IncludePlan,
  view: LocaleView,
  embedAssets: boolean,
): Map<string, PreparedRecord[]> {
  const groups = new Map<string, { records: PreparedRecord[]; ids: Set<string> }>();
  const reach = (record: PreparedRecord, field: string): PreparedRecord[] => {
    const definition = record.type.fields.get(field);
    if (!definition || (definition.type !== 'relation' && definition.type !== 'asset')) return [];
    if (definition.type === 'asset' && embedAssets) return [];
    const reached: PreparedRecord[] = [];
    for (const id of record.references(definition, view)) {
      const target = repository.byId.get(id);
      if (!target) continue; // dangling
      let group = groups.get(field);
      if (!group) groups.set(field, (group = { records: [], ids: new Set() }));
      if (!group.ids.has(id)) {
        group.ids.add(id);
        group.records.push(target);
      }
      reached.push(target);
    }
    return reached;
  };

  if ('level' in plan) {
    const expanded = new Set(answered.map((r) => r.id));
    let frontier = answered;
    for (let level = 1; level <= plan.level && frontier.length > 0; level++) {
      const next: PreparedRecord[] = [];
      for (const record of frontier) {
        for (const field of record.type.referenceFields) {
          for (const target of reach(record, field.apiId)) {
            if (!expanded.has(target.id)) {
              expanded.add(target.id);
              next.push(target);
            }
          }
        }
      }
      frontier = next;
    }
  } else {
    let work = [{ records: answered, nodes: plan.fields }];
    while (work.length > 0) {
      const next: typeof work = [];
      for (const { records, nodes } of work) {
        for (const node of nodes) {
          const reached = new Map<string, PreparedRecord>();
          for (const record of records) {
            if (node.contentType !== '*' && node.contentType !== record.contentType) continue;
            for (const target of reach(record, node.field)) reached.set(target.id, target);
          }
          if (node.children.length > 0 && reached.size > 0)
            next.push({ records: [...reached.values()], nodes: node.children });
        }
      }
      work = next;
    }
  }
  return new Map([...groups].map(([name, group]) => [name, group.records]));
}
