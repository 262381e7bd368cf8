import '../node-check.ts';
export { startServer, diffSnapshots } from './server.ts';
export type { MissingFile, MissingFilesEvent, ReadApiServer, ReloadEvent, ServerOptions } from './server.ts';
export { parseSnapshot, readSnapshotFile, SnapshotError } from '../wire/snapshot.ts';
export { snapshotSchema, fieldTypes } from '../wire/snapshot-format.ts';
export type {
  Snapshot,
  SnapshotRecord,
  FieldType,
  ContentTypeDefinition,
  CollectionDefinition,
} from '../wire/snapshot-format.ts';
