import { relative } from 'node:path';
import { AuthenticationError, NotFoundError, ReadApiError, scrub } from '../api/errors.ts';
import { type PullResult, pull } from '../pull/pull.ts';
import { ConfigError, parseSyncConfig } from '../sync/config.ts';
import { loadConfigFile } from './config-file.ts';
import { argsOf } from './usage.ts';

/**
 * `pull [--config file] [--out dir] [--assets] [--json]`: the repository the config names,
 * copied into `<out>/<repository>.json` for `comfortable-loader serve` and the integration's
 * `snapshot` option. Exit 0 done, 1 failed (nothing written), 2 bad usage or config.
 */
export async function pullCommand(args: string[]): Promise<number> {
  const parsed = argsOf(args, {
    config: { type: 'string' },
    out: { type: 'string', default: 'content' },
    assets: { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
  });
  if (typeof parsed === 'number') return parsed;
  const { values } = parsed;
  // With --json, stdout carries only the result; progress and warnings go to stderr.
  const out = values.json ? console.error : console.log;
  let repository = '';
  let apiKey: string | undefined;
  try {
    const { file, config: input } = await loadConfigFile(values.config);
    const config = parseSyncConfig(input);
    repository = config.repository;
    apiKey = config.apiKey;
    out(`Pulling ${config.repository} from ${config.baseUrl} (config ${relative(process.cwd(), file) || file})`);
    const result = await pull({
      config,
      out: values.out!,
      assets: values.assets,
      warn: (m) => console.error(`warning: ${m}`),
      progress: progressPrinter(),
    });
    if (values.json) console.log(JSON.stringify(result, null, 2));
    else
      summary(result).forEach((line) => {
        out(line);
      });
    return 0;
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`Error: ${error.message}`);
      return 2;
    }
    // The server's words may hold the key (a content type, a URL): the message never repeats it.
    console.error(
      `Error: ${scrub(explain(error as Error, repository), apiKey)} Nothing was written; the previous ` +
        `snapshot, if any, is as it was.`,
    );
    return 1;
  }
}

/** What went wrong, and what to do about it. */
function explain(error: Error, repository: string): string {
  if (error instanceof AuthenticationError)
    return (
      `The server refused the API key for repository "${repository}" (${error.status}): check ` +
      `CMFT_API_KEY, and that the key belongs to this repository.`
    );
  if (error instanceof NotFoundError && /\/v1\/[^/]+\/?$/.test(new URL(error.url).pathname))
    return (
      `The server has no repository "${repository}": check CMFT_REPOSITORY (the repository's API id) ` +
      `and CMFT_BASE_URL.`
    );
  if (error instanceof ReadApiError) return `${error.message}.`;
  if ('code' in error && typeof error.code === 'string' && /^E[A-Z]+$/.test(error.code))
    return `Could not write the snapshot: ${error.message}. Choose another --out, or make the folder writable.`;
  return error.message.endsWith('.') ? error.message : `${error.message}.`;
}

function summary(result: PullResult): string[] {
  const where = relative(process.cwd(), result.file) || result.file;
  const files = result.files
    ? `; files: ${result.files.downloaded} downloaded, ${result.files.kept} unchanged, ${result.files.failed} failed`
    : '';
  const lines = [
    `${result.written ? 'Wrote' : 'Unchanged:'} ${where}: ${result.documents} documents, ${result.assets} ` +
      `assets, ${result.collections} collections, ${result.aliases} aliases, ${result.contentTypes} content ` +
      `types (inferred)${files}, in ${(result.ms / 1000).toFixed(1)} s`,
  ];
  if (result.newKey) lines.push(`Its local API key (not your real one): ${result.localKey}`);
  lines.push(
    `Serve it: npx comfortable-loader serve ${where}   or, in astro.config.mjs: comfortable({ snapshot: '${where}' })`,
  );
  return lines;
}

/** Progress on stderr: one rewritten line on a terminal, a line per quarter otherwise. */
function progressPrinter(): (what: string, done: number, total: number) => void {
  const tty = process.stderr.isTTY;
  const shown = new Map<string, number>();
  return (what, done, total) => {
    if (total < 2000 && !tty) return;
    if (tty) {
      process.stderr.write(`\r${what}: ${done} of ${total}${done >= total ? '\n' : ''}`);
      return;
    }
    const quarter = Math.floor((done / total) * 4);
    if (quarter > (shown.get(what) ?? 0)) {
      shown.set(what, quarter);
      console.error(`${what}: ${done} of ${total}`);
    }
  };
}
