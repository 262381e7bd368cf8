import { pullCommand } from './pull.ts';
import { serve } from './serve.ts';
import { syncCommand } from './sync.ts';
import { typesCommand } from './types.ts';
import { commandUsage, usage, usageError } from './usage.ts';

/** Runs the command `argv` names; resolves with the exit code. */
export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  // `<command> --help` shows that command's usage; the bare `--help` every command's.
  if (command !== undefined && (rest.includes('--help') || rest.includes('-h'))) {
    console.log(commandUsage(command));
    return 0;
  }
  switch (command) {
    case 'serve':
      return serve(rest);
    case 'sync':
      return syncCommand(rest);
    case 'pull':
      return pullCommand(rest);
    case 'types':
      return typesCommand(rest);
    case undefined:
    case '--help':
    case '-h':
    case 'help':
      console.log(usage);
      return command === undefined ? 2 : 0;
    default:
      return usageError(`unknown command ${JSON.stringify(command)}`);
  }
}
