// A client of its own, in a process of its own: GETs one URL over one kept-alive connection,
// again and again, until its standard input closes; then prints each wait in ms as JSON.
import { Agent, get } from 'node:http';

const [url, authorization] = process.argv.slice(2) as [string, string];
const agent = new Agent({ keepAlive: true, maxSockets: 1 });
const waits: number[] = [];
let running = true;
process.stdin.on('end', () => (running = false)).resume();

const once = () =>
  new Promise<void>((resolve, reject) => {
    const started = performance.now();
    get(url, { agent, headers: { authorization } }, (response) => {
      response.resume();
      response.on('end', () => {
        if (response.statusCode !== 200) reject(new Error(`${url} answered ${response.statusCode}`));
        waits.push(performance.now() - started);
        resolve();
      });
    }).on('error', reject);
  });

process.stdout.write('ready\n');
while (running) {
  await once();
  await new Promise((resolve) => setTimeout(resolve, 2));
}
process.stdout.write(`${JSON.stringify(waits)}\n`);
agent.destroy();
