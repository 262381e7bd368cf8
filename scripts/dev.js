// `npm run dev`: the local Read API on the demo snapshot and `astro dev` on the playground. The
// server watches the snapshot and, after each reload, POSTs a webhook signed with a random secret
// to the dev server's refresh endpoint, so saving playground/content/demo.json updates the site.
//   PORT=4010 (the API; a free one if busy)  DEV_PORT=4321 (the site; a free one if busy)
//   node scripts/dev.js [snapshot.json]
import { randomBytes } from 'node:crypto';
import { astroCli, demoSnapshot, freePort, playgroundEnv, startApi, stopAll } from './playground.js';

const snapshot = process.argv[2] ?? demoSnapshot;
const devPort = await freePort(Number(process.env.DEV_PORT ?? 4321));
const secret = randomBytes(24).toString('hex');
const log = (line) => {
  // Requests are many and dull; reloads and webhook answers are what to watch.
  if (/^(reload|webhook)/.test(line)) console.log(`[read-api] ${line}`);
};
const server = await startApi(snapshot, Number(process.env.PORT ?? 4010), {
  log,
  webhook: { url: `http://127.0.0.1:${devPort}/_comfortable/refresh`, secret },
});
console.log(`Read API listening on ${server.url} (repository: demo), watching ${snapshot}`);

let announced = false;
const dev = astroCli(
  ['dev', '--host', '127.0.0.1', '--port', String(devPort)],
  playgroundEnv(server, { CMFT_REFRESH_SECRET: secret }),
  (text) => {
    if (announced || !text.includes(`:${devPort}`)) return;
    announced = true;
    console.log(`\nSite:     http://127.0.0.1:${devPort}/en/  (astro dev)`);
    console.log(`Read API: ${server.url}/demo`);
    console.log(`Edit ${snapshot} and the site refreshes: the server's signed webhook names the changed documents.`);
    console.log('Press Ctrl+C to stop.');
  },
);
const code = await dev.exited;
console.error(`astro dev stopped (exit code ${code})`);
await stopAll(code || 1);
