import '../node-check.ts';
export { startServer, diffSnapshots } from './server.ts';
export type { MissingFile, MissingFilesEvent, ReadApiServer, ReloadEvent, ServerOptions } from './server.ts';
export { parseSnapshot, readSnapshotFile, snapshotSchema, SnapshotError, fieldTypes } from '../wire/snapshot.ts';
export type {
  Snapshot,
  SnapshotRecord,
  FieldType,
  ContentTypeDefinition,
  CollectionDefinition,
} from '../wire/snapshot.ts';
