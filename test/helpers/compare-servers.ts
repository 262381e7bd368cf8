/**
 * Compares two Read API servers request by request (see `battery` in round-trip.ts): status,
 * content type and body bytes, each server's own origin in a body replaced by `<origin>` first;
 * `/files` answers are compared raw.
 */

export type BatteryMethod = 'GET' | 'POST' | 'HEAD';
export interface BatteryRequest {
  /** Unique within a battery; names what is asked, for a readable failure. */
  name: string;
  method: BatteryMethod;
  /** Path and query under the server's origin, such as `/v1/cover/documents?limit=5`. */
  path: string;
  /** A JSON body (POST). */
  body?: unknown;
  /** The status the original server is expected to answer (default 200): the battery checks itself with it. */
  status?: number;
}

export interface Target {
  /** `http://host:port` */
  origin: string;
  /** Other origins its answers show for its own (a copy that links the original's files); replaced too. */
  alsoOrigins?: string[];
  key: string;
}

export interface Answer {
  status: number;
  contentType: string;
  /** The body, each server's origin replaced by `<origin>` (raw bytes for `/files`). */
  body: Buffer;
}

export interface Difference {
  name: string;
  method: BatteryMethod;
  path: string;
  what: 'status' | 'content-type' | 'body';
  /** Excerpts (around the first differing byte, for bodies) of the two answers. */
  a: string;
  b: string;
}

/** Sends one request of a battery (the key as `Authorization`), and reads the answer as `compareServers` compares it. */
export async function fetchAnswer(target: Target, request: BatteryRequest): Promise<Answer> {
  const hasBody = request.body !== undefined;
  try {
    const response = await fetch(`${target.origin}${request.path}`, {
      method: request.method,
      headers: { authorization: target.key, ...(hasBody ? { 'content-type': 'application/json' } : {}) },
      ...(hasBody ? { body: JSON.stringify(request.body) } : {}),
    });
    const bytes = Buffer.from(await response.arrayBuffer());
    const raw = request.path.startsWith('/files/');
    return {
      status: response.status,
      contentType: response.headers.get('content-type') ?? '',
      body: raw
        ? bytes
        : Buffer.from(
            [target.origin, ...(target.alsoOrigins ?? [])].reduce(
              (text, origin) => text.replaceAll(origin, '<origin>'),
              bytes.toString('utf8'),
            ),
          ),
    };
  } catch (error) {
    return { status: -1, contentType: '', body: Buffer.from(`request failed: ${(error as Error).message}`) };
  }
}

const excerpt = (body: Buffer, at: number, raw: boolean): string => {
  const from = Math.max(0, at - 60);
  const part = body.subarray(from, at + 100);
  const shown = raw ? part.toString('hex') : part.toString('utf8');
  return `${from > 0 ? '…' : ''}${shown}${at + 100 < body.length ? '…' : ''} (${body.length} bytes, first difference at byte ${at})`;
};

/** How `compareServers` compares two answers; undefined when they are the same. */
export function compareAnswers(request: BatteryRequest, a: Answer, b: Answer): Difference | undefined {
  const base = { name: request.name, method: request.method, path: request.path };
  if (a.status !== b.status)
    return {
      ...base,
      what: 'status',
      a: `${a.status} ${a.body.toString('utf8').slice(0, 160)}`,
      b: `${b.status} ${b.body.toString('utf8').slice(0, 160)}`,
    };
  if (a.contentType !== b.contentType) return { ...base, what: 'content-type', a: a.contentType, b: b.contentType };
  if (a.body.equals(b.body)) return undefined;
  let at = 0;
  while (at < a.body.length && at < b.body.length && a.body[at] === b.body[at]) at++;
  const raw = request.path.startsWith('/files/');
  return { ...base, what: 'body', a: excerpt(a.body, at, raw), b: excerpt(b.body, at, raw) };
}

/**
 * Sends every request to both servers (a few at a time) and returns where the answers differ,
 * in the battery's order. `onAnswer` sees every pair of answers (to check the battery itself).
 */
export async function compareServers(
  a: Target,
  b: Target,
  requests: BatteryRequest[],
  options: { concurrency?: number; onAnswer?: (request: BatteryRequest, a: Answer, b: Answer) => void } = {},
): Promise<Difference[]> {
  const found: (Difference | undefined)[] = new Array(requests.length);
  let next = 0;
  const worker = async () => {
    while (next < requests.length) {
      const i = next++;
      const request = requests[i]!;
      const [answerA, answerB] = await Promise.all([fetchAnswer(a, request), fetchAnswer(b, request)]);
      options.onAnswer?.(request, answerA, answerB);
      found[i] = compareAnswers(request, answerA, answerB);
    }
  };
  await Promise.all(Array.from({ length: options.concurrency ?? 8 }, worker));
  return found.filter((d): d is Difference => d !== undefined);
}

/** One line per difference, for a failing test's message. */
export const describeDifferences = (differences: Difference[]): string =>
  differences.map((d) => `${d.name} (${d.method} ${d.path}): ${d.what} differs\n  a: ${d.a}\n  b: ${d.b}`).join('\n');
