import { type ParseArgsOptionsConfig, parseArgs } from 'node:util';
/** Each command: how it is called, and what it does. */
const commands = {
  serve: {
    synopsis:
      'serve <snapshot file or folder>... [--port N] [--host H] [--quiet]\n                           ' +
      '[--webhook <url>]   (the secret in CMFT_WEBHOOK_SECRET)',
    what: 'Serve repository snapshots as the Content Delivery Read API.',
  },
  sync: {
    synopsis: 'sync [--config <file>] [--mode incremental|fresh|offline] [--json]',
    what: 'Fetch content into the local cache; only what changed since the last sync.',
  },
  types: {
    synopsis: 'types [--config <file>] [--out <dir>] [--zod <module>] [--force]',
    what:
      'Write a zod schema file per content type (default into src/content/schemas) from the\ncache, to ' +
      'commit and edit; existing files are kept unless --force.',
  },
  pull: {
    synopsis: 'pull [--config <file>] [--out <dir>] [--assets] [--json]',
    what:
      'Copy the repository into <out>/<repository>.json (default out: content), a snapshot\nthat serve ' +
      "and the integration's snapshot option serve with a local key.\n--assets also downloads the assets' " +
      'files beside it.',
  },
} as const;

const exitCodes =
  'Exit codes: 0 done, 1 failed, 2 bad usage or config. See docs/sync.md, docs/server.md and docs/pull.md.';
const indent = (text: string, by: string) => text.replaceAll('\n', `\n${by}`);

/** The usage of every command. */
export const usage = [
  'Usage:',
  ...Object.values(commands).map((command) => `  comfortable-loader ${command.synopsis}`),
  '',
  'Commands:',
  ...Object.entries(commands).map(([name, command]) => `  ${name.padEnd(8)}${indent(command.what, ' '.repeat(10))}`),
  '',
  exitCodes,
].join('\n');

/** The usage of one command, for `<command> --help`. */
export function commandUsage(name: string): string {
  const command = commands[name as keyof typeof commands];
  if (!command) return usage;
  return `Usage:\n  comfortable-loader ${command.synopsis}\n\n${command.what}\n\n${exitCodes}`;
}

/** Prints a usage problem and returns exit code 2. */
export function usageError(message: string): number {
  console.error(`Error: ${message}\n\n${usage}`);
  return 2;
}

/** A command's flags and positionals, or the exit code of a usage error (an unknown flag, one without its value). */
export function argsOf<O extends ParseArgsOptionsConfig>(args: string[], options: O, allowPositionals = false) {
  try {
    return parseArgs({ args, options, allowPositionals });
  } catch (error) {
    return usageError((error as Error).message);
  }
}
