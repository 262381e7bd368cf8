// What src/astro/live-i18n.ts reads of Astro's server config module, which Astro's own types
// (astro/client) declare in a site and this package's build does not load.
declare module 'astro:config/server' {
  export const i18n: unknown;
}
