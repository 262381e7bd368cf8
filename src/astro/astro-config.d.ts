// What src/astro/live-env.ts reads of Astro's server modules, which Astro's own
// types (astro/client) declare in a site and this package's build does not load.
declare module 'astro:config/server' {
  export const i18n: unknown;
}
declare module 'astro:env/server' {
  export const getSecret: (key: string) => string | undefined;
}
