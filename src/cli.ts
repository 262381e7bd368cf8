#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { startServer } from './server/index.ts';

const usage = `Usage:
  comfortable-loader serve <snapshot file or folder>... [--port N] [--host H] [--quiet]
                           [--webhook <url> --webhook-secret <secret>]

Commands:
  serve   Serve repository snapshots as the Content Delivery Read API (see README).`;

const serveOptions = {
  port: { type: 'string', default: '4010' },
  host: { type: 'string', default: '127.0.0.1' },
  quiet: { type: 'boolean', default: false },
  webhook: { type: 'string' },
  'webhook-secret': { type: 'string' },
} as const;

async function serve(args: string[]): Promise<number> {
  const parse = () => parseArgs({ args, allowPositionals: true, options: serveOptions });
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse();
  } catch (error) {
    // An unknown flag or a flag without its value is a usage error, like the checks below.
    return fail((error as Error).message);
  }
  const { values, positionals } = parsed;
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) return fail(`--port must be a whole number from 0 to 65535, got ${JSON.stringify(values.port)}`);
  if (positionals.length === 0) return fail('serve needs at least one snapshot file or folder');
  if (Boolean(values.webhook) !== Boolean(values['webhook-secret'])) return fail('--webhook and --webhook-secret go together');
  const log = (line: string) => console.log(line);
  const server = await startServer({
    paths: positionals,
    port,
    host: values.host,
    ...(values.quiet ? {} : { log }),
    ...(values.webhook ? { webhook: { url: values.webhook, secret: values['webhook-secret']! } } : {}),
  });
  console.log(`Read API listening on ${server.url} (repositories: ${server.repositories().join(', ')})`);
  await new Promise<void>((done) => {
    const stop = () => void server.close().then(done);
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  return 0;
}

function fail(message: string): number {
  console.error(`Error: ${message}\n\n${usage}`);
  return 2;
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'serve':
      return serve(rest);
    case undefined:
    case '--help':
    case '-h':
    case 'help':
      console.log(usage);
      return command === undefined ? 2 : 0;
    default:
      return fail(`unknown command ${JSON.stringify(command)}`);
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`Error: ${(error as Error).message}`);
    process.exit(1);
  },
);
