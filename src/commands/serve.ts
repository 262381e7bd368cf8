import { startServer } from '../server/server.ts';
import { argsOf, usageError } from './usage.ts';

/**
 * `serve <snapshot file or folder>... [--port N] [--host H] [--quiet] [--webhook url]`, with the
 * webhook's secret in `CMFT_WEBHOOK_SECRET` (or, visible to every user of the machine in the
 * process list, `--webhook-secret s`).
 */
export async function serve(args: string[]): Promise<number> {
  const parsed = argsOf(
    args,
    {
      port: { type: 'string', default: '4010' },
      host: { type: 'string', default: '127.0.0.1' },
      quiet: { type: 'boolean', default: false },
      webhook: { type: 'string' },
      'webhook-secret': { type: 'string' },
    },
    true,
  );
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    return usageError(`--port must be a whole number from 0 to 65535, got ${JSON.stringify(values.port)}`);
  if (positionals.length === 0) return usageError('serve needs at least one snapshot file or folder');
  const secret = values['webhook-secret'] ?? process.env.CMFT_WEBHOOK_SECRET;
  if (values.webhook && !secret)
    return usageError('--webhook needs a secret: set CMFT_WEBHOOK_SECRET (or pass --webhook-secret)');
  if (!values.webhook && values['webhook-secret']) return usageError('--webhook-secret goes with --webhook <url>');
  if (values['webhook-secret']) {
    console.error(
      'Warning: --webhook-secret is visible to other users of this machine (in the process list); set ' +
        'CMFT_WEBHOOK_SECRET instead.',
    );
  }
  const log = (line: string) => console.log(line);
  const server = await startServer({
    paths: positionals,
    port,
    host: values.host,
    ...(values.quiet ? {} : { log }),
    // Warnings (asset files missing, a broken edit) go to stderr, --quiet or not.
    warn: (line) => console.error(line),
    ...(values.webhook && secret ? { webhook: { url: values.webhook, secret } } : {}),
  });
  console.log(`Read API listening on ${server.url} (repositories: ${server.repositories().join(', ')})`);
  await new Promise<void>((done) => {
    const stop = () => void server.close().then(done);
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  return 0;
}
