import { type Dispatcher, errors } from 'undici';

/**
 * One HTTP exchange on an undici dispatcher, read to its end, with a timer of our own for each
 * phase: connecting, the answer's headers, silence while its body arrives, and the whole
 * attempt's share of the time budget. undici's own timers tick about once a second, so a
 * timeout of 300 ms would fire after up to 1.3 s; these fire when they are due.
 */

interface ExchangeLimits {
  /** From dispatch until a connection is ready to carry the request. */
  connectMs: number;
  /** From the request's start on a connection until the answer's headers arrive. */
  headersMs: number;
  /** The longest silence while the body arrives. */
  bodyMs: number;
  /** The whole exchange. */
  totalMs: number;
  /** How the whole exchange's limit is told when it runs out (the time budget's, say). */
  totalMessage: string;
}

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/**
 * Sends the request and resolves to the whole answer; rejects with undici's timeout errors when a phase's timer runs
 * out.
 */
export function exchange(
  dispatcher: Dispatcher,
  options: Dispatcher.DispatchOptions,
  limits: ExchangeLimits,
): Promise<Answer> {
  return new Promise<Answer>((resolve, reject) => {
    let controller: Dispatcher.DispatchController | undefined;
    let done = false;
    let timedOut: Error | undefined;
    let status = 0;
    let headers: Answer['headers'] = {};
    const chunks: Buffer[] = [];
    const settle = (error?: Error) => {
      if (done) return;
      done = true;
      clearTimeout(phase);
      clearTimeout(total);
      if (error) reject(error);
      else resolve({ status, headers, text: textOf(chunks) });
    };
    const timeout = (error: Error) => {
      if (done) return;
      timedOut = error;
      controller?.abort(error); // a request not yet on a connection is aborted when it gets one
      settle(error);
    };
    let phase = setTimeout(
      () => timeout(new errors.ConnectTimeoutError(`Connect timeout: no connection within ${limits.connectMs} ms`)),
      limits.connectMs,
    );
    const total = setTimeout(() => timeout(new DOMException(limits.totalMessage, 'TimeoutError')), limits.totalMs);

    const handler: Dispatcher.DispatchHandler = {
      onRequestStart(started) {
        controller = started;
        if (timedOut) return started.abort(timedOut);
        clearTimeout(phase);
        phase = setTimeout(
          () => timeout(new errors.HeadersTimeoutError(`Headers timeout: no answer within ${limits.headersMs} ms`)),
          limits.headersMs,
        );
      },
      onResponseStart(_controller, statusCode, answerHeaders) {
        status = statusCode;
        headers = answerHeaders;
        clearTimeout(phase);
        phase = setTimeout(
          () => timeout(new errors.BodyTimeoutError(`Body timeout: the answer stalled for ${limits.bodyMs} ms`)),
          limits.bodyMs,
        );
      },
      onResponseData(_controller, chunk) {
        chunks.push(chunk);
        if (!done) phase.refresh();
      },
      onResponseEnd: () => settle(),
      onResponseError: (_controller, error) => settle(error),
    };
    try {
      dispatcher.dispatch({ ...options, headersTimeout: 0, bodyTimeout: 0 }, handler);
    } catch (error) {
      settle(error as Error);
    }
  });
}

function textOf(chunks: Buffer[]): string {
  const text = (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)).toString('utf8');
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text; // a byte order mark is not JSON
}
