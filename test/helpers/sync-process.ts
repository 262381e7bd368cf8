// One sync in a process of its own, for fault tests that kill it or run several at once: the
// config is argv[2] as JSON; each log line is printed as `info: …` or `warn: …`, the result as
// `result: {json}`, a failure as `error: <code> <message>` with exit code 1.
import { closeAllPools } from '../../src/api/transport.ts';
import { sync } from '../../src/sync/engine.ts';

const config = JSON.parse(process.argv[2]!);
try {
  const result = await sync(config, { info: (m) => console.log(`info: ${m}`), warn: (m) => console.log(`warn: ${m}`) });
  console.log(
    `result: ${JSON.stringify({ changeset: result.changeset, stats: result.stats, warnings: result.warnings })}`,
  );
  await closeAllPools();
} catch (error) {
  console.log(`error: ${(error as { code?: string }).code ?? 'none'} ${(error as Error).message}`);
  process.exitCode = 1;
}
