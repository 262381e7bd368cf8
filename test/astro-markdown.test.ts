import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseFrontmatter } from '@astrojs/internal-helpers/frontmatter';
import { createSatteriMarkdownProcessor } from '@astrojs/markdown-satteri';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FieldRenderer, type MarkdownPipeline } from '../src/astro/renderer.ts';
import type { Model } from '../src/model/records.ts';

/**
 * The renderer of a loader's fields on Markdown: what Astro's pipeline (Sätteri, as Astro 7 runs
 * it by default, allowed to optimise images of the test's host) makes of a field, with the
 * images of the repository's assets sized and checked as in richtext. Files under /ok answer, the
 * others 404, on a real local server.
 */

let origin: string;
let http: ReturnType<typeof createServer>;
let pipeline: MarkdownPipeline;

beforeAll(async () => {
  http = createServer((request, response) => response.writeHead(request.url!.startsWith('/ok') ? 200 : 404).end());
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  const processor = await createSatteriMarkdownProcessor({
    image: { remotePatterns: [{ protocol: 'http', hostname: '127.0.0.1' }] },
  });
  // As Astro's renderMarkdown: frontmatter split out first.
  pipeline = async (source) => {
    const { frontmatter, content } = parseFrontmatter(source);
    const { code, metadata } = await processor.render(content, { frontmatter });
    return { html: code, metadata };
  };
});

afterAll(() => http?.close());

const model: Model = {
  article: {
    title: { kind: 'text', localized: true },
    body: { kind: 'text', localized: true },
    intro: { kind: 'text', localized: false },
    text: { kind: 'richtext', localized: false },
    teaser: { kind: 'section', localized: false, fields: { summary: { kind: 'text', localized: true } } },
  },
};
const article = (fields: Record<string, unknown>) => ({ id: '501', contentType: 'article', fields });

function renderer(options: ConstructorParameters<typeof FieldRenderer>[1], warnings: string[] = []) {
  const files = new Map([
    [`${origin}/ok/beans.png`, { width: 640, height: 480 }],
    [`${origin}/gone/cup.png`, { width: 300, height: 200 }],
  ]);
  return new FieldRenderer(model, options, pipeline, () => files, { warn: (message) => warnings.push(message) });
}

describe('render names a Markdown field', () => {
  it('renders a field that holds strings with the pipeline, its headings as the pipeline gives them', async () => {
    const fields = renderer({ render: 'body' });
    expect(fields.fieldOf('article')).toEqual({ path: 'body', markdown: true });
    const [made] = await fields.render([article({ body: '## Step\n\n*one*\n\n## Step\n\n<h2>Raw</h2>' })]);
    const rendered = made!.rendered;
    expect(rendered?.html).toContain('<h2 id="step">Step</h2>');
    expect(rendered?.html).toContain('<h2 id="step-1">Step</h2>');
    expect(rendered?.html).toContain('<h2>Raw</h2>'); // raw HTML as the pipeline left it: no id made here
    expect(rendered?.metadata.headings).toEqual([
      { depth: 2, slug: 'step', text: 'Step' },
      { depth: 2, slug: 'step-1', text: 'Step' },
    ]);
    expect(fields.markdownRendered).toBe(1);
  });

  it('renders by default only richtext, and a Markdown field only when named', () => {
    expect(renderer({}).fieldOf('article')).toEqual({ path: 'text', markdown: false });
    expect(renderer({ render: 'text' }).fieldOf('article')).toEqual({ path: 'text', markdown: false });
    expect(renderer({ render: 'teaser.summary' }).fieldOf('article')).toEqual({
      path: 'teaser.summary',
      markdown: true,
    });
    expect(renderer({ render: 'nothing' }).fieldOf('article')).toBeUndefined();
    expect(renderer({ render: false }).fieldOf('article')).toBeUndefined();
    expect(renderer({}).rendersMarkdown(['article'])).toBe(false);
    expect(renderer({ render: 'body' }).rendersMarkdown(['article'])).toBe(true);
    expect(renderer({ markdown: ['intro'] }).rendersMarkdown(['article'])).toBe(true);
  });

  it('takes a value for Markdown, not a file: a leading --- is a rule, not frontmatter', async () => {
    const [made] = await renderer({ render: 'body' }).render([article({ body: '---\ntitle: x\n---\n\nText' })]);
    expect(made!.rendered?.html).toMatch(/^<hr>/);
    expect(made!.rendered?.html).toContain('title: x');
  });

  it('gives an entry without a value empty content, without asking the pipeline', async () => {
    const fields = renderer({ render: 'body', markdown: ['intro'] });
    const [made] = await fields.render([article({ title: 'Water' })]);
    expect(made!.rendered).toEqual({ html: '', metadata: { headings: [], imagePaths: [] } });
    expect(made!.markdown).toEqual({ intro: { html: '', headings: [] } });
    expect(fields.markdownRendered).toBe(0);
  });

  it('tells a field the markdown option names that holds no Markdown source, once', async () => {
    const warnings: string[] = [];
    const fields = renderer({ markdown: ['text'] }, warnings);
    const made = await fields.render([1, 2].map(() => article({ text: { html: '<p>x</p>', plain: 'x' } })));
    expect(made.map((m) => m.markdown)).toEqual([1, 2].map(() => ({ text: { html: '', headings: [] } })));
    expect(warnings).toEqual([
      'The markdown option names the field text, which holds no Markdown source (a string) in document 501 of ' +
        'content type article: it is rendered empty; name only Markdown fields there (a richtext field is ' +
        'rendered by the render option, or shown from its html)',
    ]);
  });

  it('renders the fields the markdown option names into markdown, beside the content', async () => {
    const fields = renderer({ render: 'body', markdown: ['intro'] });
    const [made] = await fields.render([article({ body: '# Body', intro: 'A **short** one\n\n## Why' })]);
    expect(made!.rendered?.html).toBe('<h1 id="body">Body</h1>\n');
    expect(made!.markdown).toEqual({
      intro: {
        html: '<p>A <strong>short</strong> one</p>\n<h2 id="why">Why</h2>\n',
        headings: [{ depth: 2, slug: 'why', text: 'Why' }],
      },
    });
    expect(fields.markdownRendered).toBe(2);
  });
});

describe('images written in Markdown', () => {
  it('sizes and marks an asset’s image for Astro’s image pipeline, and shows every other image as written', async () => {
    const body = `![Beans](${origin}/ok/beans.png "Roasted")\n\n![Elsewhere](${origin}/ok/other.png)\n\n![Here](here.png)`;
    const [made] = await renderer({ render: 'body' }).render([article({ body })]);
    const image = JSON.stringify({
      alt: 'Beans',
      title: 'Roasted',
      src: `${origin}/ok/beans.png`,
      width: 640,
      height: 480,
    });
    expect(made!.rendered?.html).toContain(`<img __ASTRO_IMAGE_="${image.replaceAll('"', '&quot;')}">`);
    expect(made!.rendered?.metadata.imagePaths).toEqual([`${origin}/ok/beans.png`]);
    // Not an asset: as written, not sized by fetching it as Astro's own Markdown would.
    expect(made!.rendered?.html).toContain(`<img src="${origin}/ok/other.png" alt="Elsewhere">`);
    expect(made!.rendered?.html).toContain('<img src="here.png" alt="Here">');
    expect(made!.unfetched).toEqual([]);
  });

  it('keeps an asset’s image that cannot be fetched with its URL and its asset’s size, and warns once', async () => {
    const warnings: string[] = [];
    const fields = renderer({ render: 'body', markdown: ['intro'] }, warnings);
    const [made] = await fields.render([article({ body: `![Cup](${origin}/gone/cup.png)`, intro: 'None' })]);
    expect(made!.rendered?.html).toBe(`<p><img src="${origin}/gone/cup.png" alt="Cup" width="300" height="200"></p>\n`);
    expect(made!.unfetched).toEqual([`${origin}/gone/cup.png`]);
    expect(warnings).toEqual([
      `Image ${origin}/gone/cup.png in field body of document 501 cannot be fetched (HTTP 404): it is not optimised (it keeps its URL, with its asset's size)`,
    ]);
  });
});
