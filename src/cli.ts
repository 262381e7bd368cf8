#!/usr/bin/env node
import { serve } from './commands/serve.ts';
import { syncCommand } from './commands/sync.ts';
import { typesCommand } from './commands/types.ts';
import { usage, usageError } from './commands/usage.ts';

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'serve':
      return serve(rest);
    case 'sync':
      return syncCommand(rest);
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

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`Error: ${(error as Error).message}`);
    process.exit(1);
  },
);
