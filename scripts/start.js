// `npm start`: the local Read API on the demo snapshot, with a ready-to-paste curl example.
import { fileURLToPath } from 'node:url';
import { startServer } from '../dist/server/index.js';

const snapshot = fileURLToPath(new URL('../playground/content/demo.json', import.meta.url));
const key = 'demo-read-key-0123456789abcdef';
const server = await startServer({
  paths: [snapshot],
  port: Number(process.env.PORT ?? 4010),
  log: (line) => console.log(line),
});
console.log(`Read API listening on ${server.url} (repository: demo, key: ${key})`);
console.log('Try:');
console.log(`  curl -g -H 'Authorization: ${key}' '${server.url}/demo/collections/posts?limit=2&locale=de_CH&fields=fields(title),meta(id)'`);
const stop = () => server.close().then(() => process.exit(0));
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
