import type { AstroI18n } from './i18n.ts';

/**
 * What a live loader reads of the server it runs in, where the integration's registry is not:
 * its environment, as `getSecret` of `astro:env/server` reads it (the shell and the `.env` files
 * in `astro dev`, the environment of the built server, through its adapter, once built), and the
 * site's `i18n`, from the config Astro serves to server code (`astro:config/server`). Outside
 * Astro's server (a unit test) neither module is there: `process.env`, and no `i18n`.
 */

/** A module of Astro's server, imported once per server; undefined outside it. */
function serverModule<T>(load: () => Promise<T>): () => Promise<T | undefined> {
  let module: Promise<T | undefined> | undefined;
  return () => (module ??= load().catch(() => undefined));
}

const env = serverModule(() => import('astro:env/server'));
const config = serverModule(() => import('astro:config/server'));

/** A variable of the server's environment; undefined when it is unset or empty. */
export async function serverVariable(name: string): Promise<string | undefined> {
  const getSecret = (await env())?.getSecret;
  return (getSecret ? getSecret(name) : globalThis.process?.env[name]) || undefined;
}

/** The site's `i18n`; undefined without one. */
export async function siteI18n(): Promise<AstroI18n | undefined> {
  return ((await config())?.i18n ?? undefined) as AstroI18n | undefined;
}
