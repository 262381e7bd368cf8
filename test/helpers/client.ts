import { afterAll, expect } from 'vitest';
import { type ClientOptions, createClient, type ReadApiClient } from '../../src/api/client.ts';
import { Sorting } from '../../src/api/query.ts';
import { closeAllPools, type ResponseEvent } from '../../src/api/transport.ts';
import { type ReadApiServer, startServer } from '../../src/server/index.ts';
import { demoKey, demoSnapshot, fixture, servedForFile, tinyKey } from './server.ts';

/**
 * What the client's tests share: the local server with the hand-written `tiny` fixture and the
 * playground's `demo` repository, clients of it that record what they sent, and a way to send a
 * call in each wire form the client knows — bracketed parameters (the default), `query=` JSON
 * (`notation: 'json'`) and a POST body (forced with a tiny `maxUrlLength`) — expecting the same
 * answer in each.
 */

/**
 * Serves `tiny` and `demo` for the tests of a file (started before them, closed after, with
 * every pooled connection); `server()` is that server, and the clients are of it.
 */
export function serveClients() {
  const server = servedForFile(() => startServer({ paths: [fixture('tiny.json'), demoSnapshot], watch: false }));
  afterAll(() => closeAllPools());
  return { server, ...clientsOf(server) };
}

export type Form = 'brackets' | 'json' | 'post';
const everyForm: Form[] = ['brackets', 'json', 'post'];

/** Checks that the request went out in the given form. */
export function expectForm(event: ResponseEvent, form: Form): void {
  if (form === 'post') {
    expect(event.method).toBe('POST');
    expect(event.url).not.toContain('?');
  } else {
    expect(event.method).toBe('GET');
    // Options travel as one `query=` parameter, or as brackets; a request without options has no query at all.
    if (form === 'json') expect(event.url).toMatch(/^[^?]*(\?query=[^&]+)?$/);
    else expect(event.url).not.toContain('query=');
  }
}

/** Clients of the server `server()` gives. */
function clientsOf(server: () => ReadApiServer) {
  /** A client of `tiny` (or `demo`) that records what it sent. */
  const clientOf = (
    repository: 'tiny' | 'demo',
    options: Partial<ClientOptions> = {},
    events: ResponseEvent[] = [],
  ): ReadApiClient =>
    createClient({
      baseUrl: server().url,
      repository,
      apiKey: repository === 'tiny' ? tinyKey : demoKey,
      onResponse: (event) => events.push(event),
      ...options,
    });
  const clientInForm = (form: Form, events: ResponseEvent[], repository: 'tiny' | 'demo' = 'tiny'): ReadApiClient =>
    clientOf(repository, form === 'json' ? { notation: 'json' } : form === 'post' ? { maxUrlLength: 1 } : {}, events);
  /**
   * Runs one call in each form, checks each went out in its form and that every answer is the same,
   * and returns that answer.
   */
  const inEveryForm = async <T>(
    call: (client: ReadApiClient) => Promise<T>,
    forms: Form[] = everyForm,
    repository: 'tiny' | 'demo' = 'tiny',
  ): Promise<T> => {
    const answers: T[] = [];
    for (const form of forms) {
      const events: ResponseEvent[] = [];
      answers.push(await call(clientInForm(form, events, repository)));
      expect(events).toHaveLength(1);
      expectForm(events[0]!, form);
    }
    for (const answer of answers.slice(1)) expect(answer).toEqual(answers[0]);
    return answers[0]!;
  };
  return { clientOf, clientInForm, inEveryForm };
}

/** The records' ids, in order. */
export const ids = (answer: { data: { meta?: { id?: string } }[] }): string[] =>
  answer.data.map((record) => record.meta!.id!);
/** Included records' ids by group. */
export const includedIds = (includes: Record<string, { meta?: { id?: string } }[]> | undefined) =>
  Object.fromEntries(Object.entries(includes ?? {}).map(([group, records]) => [group, records.map((r) => r.meta!.id)]));
export const byId = { sorting: new Sorting().asc('meta.id') };
