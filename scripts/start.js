// `npm start`: the local Read API on the demo snapshot, the playground built against it, and
// `astro preview` serving the result. Ctrl+C stops everything.
//   PORT=4010 (the API; a free one if busy)  SITE_PORT=4321 (the site; a free one if busy)
//   node scripts/start.js [snapshot.json]
import { astroCli, demoKey, demoSnapshot, freePort, playgroundEnv, startApi, stopAll } from './playground.js';

const snapshot = process.argv[2] ?? demoSnapshot;
const server = await startApi(snapshot, Number(process.env.PORT ?? 4010));
console.log(`Read API listening on ${server.url} (repository: demo)`);
const env = playgroundEnv(server);

const built = await astroCli(['build'], env).exited;
if (built !== 0) {
  console.error(`astro build failed (exit code ${built}); the Read API was at ${server.url}`);
  await stopAll(built);
}

const sitePort = await freePort(Number(process.env.SITE_PORT ?? 4321));
let announced = false;
const preview = astroCli(['preview', '--host', '127.0.0.1', '--port', String(sitePort)], env, (text) => {
  if (announced || !text.includes(`:${sitePort}`)) return;
  announced = true;
  console.log(`\nSite:     http://127.0.0.1:${sitePort}/  (built from ${snapshot})`);
  console.log(`Read API: ${server.url}/demo  (repository demo, key ${demoKey})`);
  console.log(
    `  curl -g -H 'Authorization: ${demoKey}' '${server.url}/demo/collections/posts?limit=2&locale=de_CH&fields=fields(title),meta(id)'`,
  );
  console.log('Press Ctrl+C to stop.');
});
const code = await preview.exited;
console.error(`astro preview stopped (exit code ${code})`);
await stopAll(code || 1);
