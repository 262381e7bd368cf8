// @ts-check
import { appendFileSync } from 'node:fs';
import { defineConfig } from 'astro/config';
import comfortable from 'comfortable-loader/astro';

// Everything that differs between machines comes from the environment: `npm start` and
// `npm run dev` set the connection, the end-to-end tests also set the cache and the changeset file.
const { CMFT_BASE_URL, CMFT_API_KEY, CMFT_REFRESH_SECRET, CMFT_CACHE_DIR, CMFT_CHANGESET_FILE } = process.env;

export default defineConfig({
  // Astro's own i18n routing: the repository's locales (en_US, de_DE, de_CH) map to these by code
  // and language; entries carry the one they map to (data.astroLocale), pages link with astro:i18n.
  i18n: {
    locales: ['en', 'de', { path: 'de-ch', codes: ['de-CH'] }],
    defaultLocale: 'en',
    routing: { prefixDefaultLocale: true },
  },
  // The content cache lives in the `comfortable/` folder inside Astro's cache folder.
  ...(CMFT_CACHE_DIR ? { cacheDir: CMFT_CACHE_DIR } : {}),
  // A build renders again only the pages whose cacheKey changed (every getStaticPaths returns one).
  experimental: { incrementalBuild: true },
  integrations: [
    comfortable({
      baseUrl: CMFT_BASE_URL ?? 'http://127.0.0.1:4010/v1',
      repository: 'demo',
      apiKey: /** @type {string} */ (CMFT_API_KEY),
      // Relations to these content types become references to these collections (content.config.ts).
      contentTypes: { post: 'posts', author: 'authors', category: 'categories', page: 'pages', event: 'events' },
      // Enables the signed dev refresh endpoint that `npm run dev` points the server's webhook at.
      refreshSecret: CMFT_REFRESH_SECRET,
      // Sources read through virtual modules (see src/pages/[locale]/categories/index.astro).
      queries: { categories: { contentType: 'category' } },
      // Records what each sync changed, one JSON line per sync (used by test/playground.test.ts).
      ...(CMFT_CHANGESET_FILE ? { onSync: (changeset) => appendFileSync(CMFT_CHANGESET_FILE, `${JSON.stringify(changeset)}\n`) } : {}),
    }),
  ],
});
