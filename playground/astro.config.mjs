// @ts-check
import { defineConfig } from 'astro/config';
import comfortable from 'comfortable-loader/astro';

export default defineConfig({
  integrations: [
    comfortable({
      baseUrl: process.env.CMFT_BASE_URL ?? 'http://127.0.0.1:4010/v1',
      repository: 'demo',
      apiKey: process.env.CMFT_API_KEY ?? '',
      contentTypes: { post: 'posts', author: 'authors', category: 'categories', page: 'pages' },
      refreshSecret: process.env.CMFT_REFRESH_SECRET,
      queries: { categories: { contentType: 'category' } },
    }),
  ],
});
