import type { PageReport } from '../../src/astro/toolbar.ts';
import type { AstroDev } from './astro.ts';

/** What the "Comfortable" toolbar app sends of a page: its path, its html's lang and its text. */
export async function pageQuery(dev: AstroDev, path: string): Promise<{ path: string; lang: string; text: string }> {
  const html = await (await fetch(`${dev.url}${path}`)).text();
  const body = html.slice(html.indexOf('<body'));
  return {
    path,
    lang: /<html lang="([^"]*)"/.exec(html)?.[1] ?? '',
    text: body.replace(/<script[\s\S]*?<\/script>/g, '').replace(/<[^>]+>/g, ''),
  };
}

/** Asks the app's server side over the dev server's HMR socket, as the app does; resolves with its report. */
export async function askToolbar(
  dev: AstroDev,
  event: 'comfortable:page' | 'comfortable:sync',
  query: unknown,
): Promise<PageReport> {
  const client = await (await fetch(`${dev.url}/@vite/client`)).text();
  const token = /const wsToken = "([^"]*)"/.exec(client)?.[1];
  const socket = new WebSocket(`${dev.url.replace('http', 'ws')}/?token=${token}`, 'vite-hmr');
  try {
    return await new Promise<PageReport>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${event} report within 30 s`)), 30_000);
      socket.addEventListener('error', () => reject(new Error('the HMR socket failed')));
      socket.addEventListener('open', () => socket.send(JSON.stringify({ type: 'custom', event, data: query })));
      socket.addEventListener('message', (message) => {
        const payload = JSON.parse(String(message.data));
        if (payload.type === 'custom' && payload.event === 'comfortable:report') {
          clearTimeout(timer);
          resolve(payload.data);
        }
      });
    });
  } finally {
    socket.close();
  }
}
