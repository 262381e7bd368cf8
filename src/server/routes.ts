import { createHash } from 'node:crypto';
import { type Body, collectionMembers, listBody, recordBody } from './answer.ts';
import { ApiError, badRequest, notFound, quote } from './errors.ts';
import { mergeOptionSources, readOptions } from './options.ts';
import { parseQueryString } from './query-string.ts';
import type { PreparedRepository } from './prepared-repository.ts';

/** A request as the router sees it: method, path, raw query string, the headers it reads, and a parsed body. */
interface ApiRequest {
  method: string;
  path: string;
  query: string;
  authorization?: string | undefined;
  ifNoneMatch?: string | undefined;
  body?: unknown;
}

interface ApiResponse {
  status: number;
  headers: Record<string, string>;
  /** JSON text, or its UTF-8 bytes in parts to send one after another. */
  body: string | Buffer[];
}

type Route =
  | { kind: 'repository' | 'documents' }
  | { kind: 'document' | 'asset'; id: string }
  | { kind: 'alias'; name: string }
  | { kind: 'collection'; name: string };

const listKinds = new Set(['documents', 'collection']);

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw badRequest(`Malformed percent-encoding in path segment ${quote(segment)}`);
  }
}

/** Matches `/v1/<repo>[/<endpoint>[/<name>]]`, a trailing slash allowed. */
function matchRoute(path: string): { repo: string; route: Route } | undefined {
  if (!path.startsWith('/v1/')) return undefined;
  const segments = path.slice(4).split('/');
  if (segments.length > 1 && segments[segments.length - 1] === '') segments.pop();
  if (segments.length === 0 || segments.length > 3 || segments.some((s) => s === '')) return undefined;
  const [repo, endpoint, name] = segments.map(decodeSegment) as [string, string?, string?];
  if (endpoint === undefined) return { repo, route: { kind: 'repository' } };
  if (endpoint === 'documents')
    return { repo, route: name === undefined ? { kind: 'documents' } : { kind: 'document', id: name } };
  if (name === undefined) return undefined;
  if (endpoint === 'alias') return { repo, route: { kind: 'alias', name } };
  if (endpoint === 'collections') return { repo, route: { kind: 'collection', name } };
  if (endpoint === 'assets') return { repo, route: { kind: 'asset', id: name } };
  return undefined;
}

function allowedMethods(route: Route): string {
  return listKinds.has(route.kind) ? 'GET, HEAD, POST, OPTIONS' : 'GET, HEAD, OPTIONS';
}

function apiKeyOf(request: ApiRequest, queryKey: string | undefined): string | undefined {
  const header = request.authorization?.trim();
  if (header) return header.replace(/^Bearer\s+/i, '');
  // The key may travel in the URL for GET and HEAD only.
  return request.method === 'POST' ? undefined : queryKey || undefined;
}

function json(status: number, body: string | Buffer[], extra: Record<string, string> = {}): ApiResponse {
  return { status, headers: { 'content-type': 'application/json; charset=utf-8', ...extra }, body };
}

function errorResponse(error: ApiError): ApiResponse {
  return json(error.status, JSON.stringify(error.body()), error.headers);
}

function etagOf(body: string | Buffer[]): string {
  const sha1 = createHash('sha1');
  for (const part of typeof body === 'string' ? [body] : body) sha1.update(part);
  return `"${sha1.digest('base64url')}"`;
}

/** Whether an `If-None-Match` header names the ETag (weak or strong, or `*`). */
export function matchesEtag(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return header.split(',').some((tag) => {
    const trimmed = tag.trim();
    return trimmed === '*' || trimmed.replace(/^W\//, '') === etag;
  });
}

/**
 * Answers one API request. Checks run in the spec's order: route shape (404), method (405),
 * repository (404), key (401), options (400), then the addressed item (404).
 */
export function handleApiRequest(
  repositories: ReadonlyMap<string, PreparedRepository>,
  request: ApiRequest,
): ApiResponse {
  try {
    const matched = matchRoute(request.path);
    if (!matched) throw notFound(`No such route: ${quote(request.path)}; routes start with /v1/<repository>`);
    const { repo, route } = matched;
    const allow = allowedMethods(route);
    const isList = listKinds.has(route.kind);
    if (!['GET', 'HEAD'].includes(request.method) && !(request.method === 'POST' && isList)) {
      throw new ApiError(405, `Method ${request.method} is not allowed here; allowed: ${allow}`, { allow });
    }
    // Take the snapshot once: a reload while this request runs cannot mix two snapshots.
    const repository = repositories.get(repo);
    if (!repository) throw notFound(`No repository ${quote(repo)}`);
    const { tree, key: queryKey } = parseQueryString(request.query);
    const key = apiKeyOf(request, queryKey);
    if (!key) throw new ApiError(401, 'No API key found in request');
    if (!repository.apiKeys.has(key)) throw new ApiError(401, 'Invalid authentication credentials');

    let body: Body;
    if (route.kind === 'repository') {
      body = { json: JSON.stringify({ status: 200, meta: repository.info }) };
    } else {
      const options = readOptions(repository, mergeOptionSources(tree, request.body), isList);
      switch (route.kind) {
        case 'documents':
          body = listBody(repository, repository.defaultOrder, options);
          break;
        case 'collection': {
          const collection = repository.snapshot.collections.find((c) => c.apiId === route.name);
          if (!collection) throw notFound(`No collection ${quote(route.name)} in repository ${quote(repo)}`);
          body = listBody(repository, collectionMembers(repository, collection, options.locale), options);
          break;
        }
        case 'document':
        case 'alias':
        case 'asset': {
          const id = route.kind === 'alias' ? repository.aliases.get(route.name) : route.id;
          if (id === undefined)
            throw notFound(`No alias ${quote(route.kind === 'alias' ? route.name : '')} in repository ${quote(repo)}`);
          const record = repository.byId.get(id);
          const wantAsset = route.kind === 'asset';
          if (!record || (record.contentType === '_asset') !== wantAsset) {
            throw notFound(`No ${wantAsset ? 'asset' : 'document'} with id ${quote(id)} in repository ${quote(repo)}`);
          }
          body = recordBody(repository, record, options);
          break;
        }
      }
    }
    const etag = etagOf(body.identity === undefined ? body.json : `${repository.version}|${body.identity}`);
    if (matchesEtag(request.ifNoneMatch, etag)) return { status: 304, headers: { etag }, body: '' };
    return json(200, body.json, { etag });
  } catch (error) {
    if (error instanceof ApiError) return errorResponse(error);
    throw error;
  }
}
