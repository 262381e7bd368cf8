/** The statuses the server answers with an error, and their codes (spec §9). */
const codeByStatus = {
  400: 'bad_request',
  401: 'unauthorized',
  404: 'not_found',
  405: 'method_not_allowed',
  408: 'request_timeout',
  413: 'payload_too_large',
} as const;

/** An error the server answers with a 4xx JSON body of the spec's shape. */
export class ApiError extends Error {
  readonly status: keyof typeof codeByStatus;
  readonly code: (typeof codeByStatus)[keyof typeof codeByStatus];
  readonly headers: Record<string, string>;

  constructor(status: keyof typeof codeByStatus, message: string, headers: Record<string, string> = {}) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = codeByStatus[status];
    this.headers = headers;
  }

  body() {
    return { status: this.status, message: this.message, error: { code: this.code, message: this.message } };
  }
}

export const badRequest = (message: string): ApiError => new ApiError(400, message);
export const notFound = (message: string): ApiError => new ApiError(404, message);

/** Quotes a user-supplied value for an error message, cut short so a huge value cannot flood a log. */
export function quote(value: unknown): string {
  let text: string;
  try {
    text = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  } catch {
    // Too deep to stringify (and String() of a deep array overflows the stack too).
    text = Array.isArray(value) ? '[...]' : typeof value === 'object' && value !== null ? '{...}' : String(value);
  }
  return JSON.stringify(text.length > 80 ? `${text.slice(0, 77)}...` : text);
}

/** The ApiError `work` throws (the 400 a request would get), or undefined; any other error is thrown on. */
export function refusalOf(work: () => unknown): ApiError | undefined {
  try {
    work();
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
  return undefined;
}

/**
 * For a path that names a field through its section (`*.fields.seo.title`, or `fields.seo.title`
 * without the content type), the hint to name the field alone; else nothing.
 */
export function sectionHint(path: string, withContentType: boolean): string {
  const parts = path.split('.');
  const at = withContentType ? 1 : 0;
  if (parts.length !== at + 3 || parts[at] !== 'fields' || parts.includes('')) return '';
  parts.splice(at + 1, 1);
  return `; a field inside a section is named without the section, such as ${parts.join('.')}`;
}
