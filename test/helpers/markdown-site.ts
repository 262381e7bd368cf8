import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type ReadApiServer, startServer } from '../../src/server/index.ts';
import { astroTsconfig } from './tarball.ts';
import { fixture } from './server.ts';

/**
 * A site of Markdown fields (test/fixtures/markdown.json): articles whose localized `body` is
 * `render(entry)`'s content and whose plain `intro` the `markdown` option renders, as the README
 * shows them. The server answers the fixture with its images' `{{origin}}` made its own.
 */

/** Serves the Markdown fixture (its images beside it, in `dir`); `snapshot` is what it serves, to edit and replace. */
export async function serveJournal(dir: string): Promise<{ server: ReadApiServer; snapshot: any }> {
  await mkdir(join(dir, 'images'), { recursive: true });
  await copyFile(fixture('images/apples.svg'), join(dir, 'images/apples.svg'));
  const text = await readFile(fixture('markdown.json'), 'utf8');
  await writeFile(join(dir, 'journal.json'), text);
  const server = await startServer({ paths: [join(dir, 'journal.json')], port: 0, watch: false, log: () => {} });
  const snapshot = JSON.parse(text.replaceAll('{{origin}}', server.origin));
  await server.replaceSnapshot(structuredClone(snapshot));
  return { server, snapshot };
}

/** The connection a build of the site takes from the environment. */
export const journalEnv = (server: ReadApiServer) => ({
  CMFT_BASE_URL: server.url,
  CMFT_REPOSITORY: 'journal',
  CMFT_API_KEY: 'tiny-key',
});

/** A rehype plugin of the site's own: it marks every `h2` it sees, so a page shows whose pipeline rendered it. */
const rehypePlugin = `
/** Marks each h2 with data-site-plugin. */
function rehypeMarkH2() {
  return (tree) => {
    const walk = (node) => {
      if (node.type === 'element' && node.tagName === 'h2') node.properties = { ...node.properties, dataSitePlugin: 'yes' };
      for (const child of node.children ?? []) walk(child);
    };
    walk(tree);
  };
}
`;

/**
 * Writes the site's files into `dir` (where the package is installed). With `rehype`, its
 * `markdown` config has a rehype plugin of its own, through `unified()` as Astro 7 asks.
 * `SITE_OUT_DIR` and `SITE_CACHE_DIR` in the environment give a build its own output and cache.
 */
export async function writeJournalSite(dir: string, { rehype = false } = {}): Promise<void> {
  const files: Record<string, string> = {
    'tsconfig.json': astroTsconfig,
    'astro.config.mjs': `import { defineConfig } from 'astro/config';
import comfortable from 'comfortable-loader/astro';
${rehype ? `import { unified } from '@astrojs/markdown-remark';\n${rehypePlugin}` : ''}
export default defineConfig({
  outDir: process.env.SITE_OUT_DIR || './dist',
  cacheDir: process.env.SITE_CACHE_DIR || './node_modules/.astro',
  experimental: { incrementalBuild: true },
  integrations: [comfortable()],${rehype ? '\n  markdown: { processor: unified({ rehypePlugins: [rehypeMarkH2] }) },' : ''}
});
`,
    'src/content.config.ts': `import { defineCollection } from 'astro:content';
import { comfortableLoader } from 'comfortable-loader/astro';

export const collections = {
  articles: defineCollection({
    loader: comfortableLoader({ collection: 'articles', render: 'body', markdown: ['intro'] }),
  }),
};
`,
    'src/pages/[locale]/[slug].astro': `---
import { getCollection, render } from 'astro:content';
import type { RichTextLink } from 'comfortable-loader/astro';
import RichText from 'comfortable-loader/RichText.astro';

export async function getStaticPaths() {
  const articles = await getCollection('articles');
  return articles.map((article) => ({
    params: { locale: article.data.locale, slug: article.data.fields.slug ?? article.data.id },
    props: { article, articles },
    cacheKey: article.data.cacheKey,
  }));
}
const { article, articles } = Astro.props;
const { Content, headings } = await render(article);
// A link to another article (its Read API URL, …/documents/<id>) goes to that article's page.
const links = ({ document }: RichTextLink) => {
  const target = articles.find((other) => other.data.id === document && other.data.locale === article.data.locale);
  return target && \`/\${target.data.locale}/\${target.data.fields.slug}/\`;
};
---
<html lang={article.data.locale}>
  <head><meta charset="utf-8" /><title>{article.data.fields.title}</title></head>
  <body>
    <script type="application/json" id="headings" set:html={JSON.stringify(headings)} />
    <section id="intro"><RichText field={article.data.markdown.intro} /></section>
    <article id="body"><Content /></article>
    <aside id="linked"><RichText entry={article} links={links} /></aside>
  </body>
</html>
`,
  };
  for (const [name, text] of Object.entries(files)) {
    await mkdir(join(dir, name, '..'), { recursive: true });
    await writeFile(join(dir, name), text);
  }
}
