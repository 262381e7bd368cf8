import { signWebhook } from '../wire/webhook.ts';
import type { ReloadEvent } from './repositories.ts';

export interface WebhookTarget {
  url: string;
  secret: string;
}

/**
 * Sends a reload to a webhook (spec §10): `{ repository, changed, removed }`, signed with a new
 * id and the time. A failure is logged, not thrown: the reload itself has happened.
 */
export async function sendWebhook(
  target: WebhookTarget,
  event: ReloadEvent,
  log: (line: string) => void,
): Promise<void> {
  const body = JSON.stringify(event);
  try {
    const response = await fetch(target.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...signWebhook(target.secret, body) },
      body,
    });
    await response.arrayBuffer();
    log(`webhook ${target.url} answered ${response.status}`);
  } catch (error) {
    log(`webhook ${target.url} failed: ${(error as Error).message}`);
  }
}
