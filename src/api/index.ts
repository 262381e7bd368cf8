export { createClient, ReadApiClient, defaultBaseUrl, maxPageSize } from './client.ts';
export type { ClientOptions, ListSource, PageOptions } from './client.ts';
export {
  Filter,
  Sorting,
  Includes,
  filterOperators,
  serializeQuery,
  toBracketQuery,
  toJsonQuery,
  optionsToJson,
} from './query.ts';
export type {
  FilterEntry,
  FilterOperator,
  FilterValue,
  IncludeMap,
  ListOptions,
  RecordOptions,
  SortingMap,
  SortDirection,
} from './query.ts';
export {
  ReadApiError,
  AuthenticationError,
  NotFoundError,
  BadRequestError,
  RateLimitedError,
  ServerError,
  NetworkError,
  TimeoutError,
  UnexpectedAnswerError,
  redactUrl,
} from './errors.ts';
export type { ReadApiErrorCode } from './errors.ts';
export { MemoryEtagStore, closeAllPools, sharedLimit } from './transport.ts';
export type { EtagStore, ResponseEvent, Timeouts, TransportOptions } from './transport.ts';
export type { RetryPolicy } from './retry.ts';
