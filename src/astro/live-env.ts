/**
 * The environment of the server a live loader runs in, read as `getSecret` of `astro:env/server`
 * reads it: the shell and the `.env` files in `astro dev`, the environment of the built server
 * (through its adapter) once built. Outside Astro's server (a unit test), `process.env`.
 */

let getSecret: Promise<((name: string) => string | undefined) | undefined> | undefined;

/** A variable of the server's environment; undefined when it is unset or empty. */
export async function serverVariable(name: string): Promise<string | undefined> {
  getSecret ??= import('astro:env/server').then(
    (env) => env.getSecret,
    () => undefined,
  );
  const read = await getSecret;
  return (read ? read(name) : globalThis.process?.env[name]) || undefined;
}
