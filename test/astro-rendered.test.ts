import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { copyFile, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import * as devalue from 'devalue';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderRichtext } from '../src/astro/rendered.ts';
import { FieldRenderer } from '../src/astro/renderer.ts';
import { linkTarget } from '../src/astro/richtext.ts';
import { closeAllPools } from '../src/api/transport.ts';
import { type ReadApiServer, startServer } from '../src/server/index.ts';
import { copyFixture, runAstro } from './helpers/astro.ts';
import { snapshotFolder, tinyKey, tinySnapshot } from './helpers/server.ts';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('renderRichtext', () => {
  const files = new Map([
    ['https://cdn.example/a.png', { width: 800, height: 600 }],
    ['https://cdn.example/nosize.png', {}],
  ]);
  const all = () => true;

  it('gives every heading an id (kept when it has one, numbered when repeated) and lists them', () => {
    const { html, metadata } = renderRichtext(
      '<h2>Tides &amp; <em>times</em></h2><p>x</p><h3 id="own">Own</h3><h2>Tides &amp; times</h2>',
      files,
      all,
    );
    expect(metadata.headings).toEqual([
      { depth: 2, slug: 'tides--times', text: 'Tides & times' },
      { depth: 3, slug: 'own', text: 'Own' },
      { depth: 2, slug: 'tides--times-1', text: 'Tides & times' },
    ]);
    expect(html).toBe(
      '<h2 id="tides--times">Tides &amp; <em>times</em></h2><p>x</p><h3 id="own">Own</h3><h2 id="tides--times-1">Tides &amp; times</h2>',
    );
  });

  const headingsOf = (html: string) =>
    renderRichtext(html, files, all).metadata.headings.map(({ slug, text }) => [slug, text]);

  it('numbers a repeated heading past the ids already made, so no two headings share one', () => {
    const { html, metadata } = renderRichtext('<h2>Step</h2><h2>Step 1</h2><h2>Step</h2>', files, all);
    expect(metadata.headings.map((heading) => heading.slug)).toEqual(['step', 'step-1', 'step-2']);
    expect(html).toBe('<h2 id="step">Step</h2><h2 id="step-1">Step 1</h2><h2 id="step-2">Step</h2>');
  });

  it('decodes every character reference of a heading, named or numeric, before making its id and text', () => {
    expect(headingsOf('<h2>Prices&nbsp;2024</h2>')).toEqual([['prices2024', 'Prices\u00a02024']]);
    expect(headingsOf('<h3>It&#8217;s &#x41;&#0;</h3>')).toEqual([['its-a', 'It\u2019s A\ufffd']]);
    expect(headingsOf('<h2>Fish &amp chips &lt;3</h2>')).toEqual([['fish--chips-3', 'Fish & chips <3']]); // as a browser reads them
  });

  it("takes a heading's text from its descendants' text, without tags or comments, and keeps its spaces", () => {
    expect(headingsOf('<h2> Tides &amp; <em>times</em> <code>a&lt;b</code><!-- note --></h2>')).toEqual([
      ['-tides--times-ab', ' Tides & times a<b'],
    ]);
  });

  it('keeps the letters of every script in ids', () => {
    expect(headingsOf('<h2>Привет мир</h2><h2>日本語 テスト</h2><h2>Ελληνικά</h2>')).toEqual([
      ['привет-мир', 'Привет мир'],
      ['日本語-テスト', '日本語 テスト'],
      ['ελληνικά', 'Ελληνικά'],
    ]);
  });

  it('keeps an id a heading has, even an empty one, and, as Markdown does, does not count it against later headings', () => {
    const { html, metadata } = renderRichtext(
      '<h2 id="intro">Welcome</h2><h2>Intro</h2><h2 id="a&amp;b" class="x">Y</h2><h2 id="">Z</h2>',
      files,
      all,
    );
    expect(metadata.headings.map((heading) => heading.slug)).toEqual(['intro', 'intro', 'a&b', '']);
    expect(html).toBe(
      '<h2 id="intro">Welcome</h2><h2 id="intro">Intro</h2><h2 id="a&amp;b" class="x">Y</h2><h2 id="">Z</h2>',
    );
  });

  it("reads attribute values as a browser does: references decoded, but not a bare name followed by '=' in a URL", () => {
    const urls = new Map([
      ['https://cdn.example/q.png?w=1&h=2', { width: 1, height: 1 }],
      ['https://cdn.example/q.png?w=1&copy=2', { width: 1, height: 1 }],
    ]);
    const { metadata } = renderRichtext(
      '<img src="https://cdn.example/q.png?w=1&amp;h=2"><img src="https://cdn.example/q.png?w=1&copy=2">',
      urls,
      all,
    );
    expect(metadata.imagePaths).toEqual([...urls.keys()]);
  });

  it('reads the HTML as a browser does: unquoted attributes, nothing inside comments, the rest kept as it is', () => {
    const source =
      '<!-- <h2>Old</h2> <img src="https://cdn.example/a.png"> --><h2 class=lead>Now</h2>' +
      '<p><IMG SRC=https://cdn.example/a.png alt=A></p><table><tr><td>1</td></tr></table>';
    const { html, metadata } = renderRichtext(source, files, all);
    expect(metadata.headings).toEqual([{ depth: 2, slug: 'now', text: 'Now' }]);
    expect(metadata.imagePaths).toEqual(['https://cdn.example/a.png']);
    expect(html).toBe(
      '<!-- <h2>Old</h2> <img src="https://cdn.example/a.png"> --><h2 id="now" class=lead>Now</h2>' +
        '<p><img __ASTRO_IMAGE_="{&quot;alt&quot;:&quot;A&quot;,&quot;src&quot;:&quot;https://cdn.example/a.png&quot;,' +
        '&quot;width&quot;:800,&quot;height&quot;:600}"></p><table><tr><td>1</td></tr></table>',
    );
  });

  it("turns images of the repository's assets into Astro image references with the asset's size, and leaves the others", () => {
    const source =
      '<p><img class="wide" src="https://cdn.example/a.png" alt="A &quot;photo&quot;"><img src="https://other.example/b.png" alt="B"><img src="https://cdn.example/nosize.png"></p>';
    const { html, metadata } = renderRichtext(source, files, all);
    const [reference] = [...html.matchAll(/__ASTRO_IMAGE_="([^"]+)"/g)].map((m) =>
      JSON.parse(m[1]!.replaceAll('&quot;', '"').replaceAll('&amp;', '&')),
    );
    expect(reference).toEqual({
      class: 'wide',
      alt: 'A "photo"',
      src: 'https://cdn.example/a.png',
      width: 800,
      height: 600,
    });
    expect(html).toContain('<img src="https://other.example/b.png" alt="B">');
    expect(html).toContain('<img src="https://cdn.example/nosize.png">'); // no size to give Astro
    expect(metadata.imagePaths).toEqual(['https://cdn.example/a.png']);
  });

  it("gives an asset's image it may not optimise the asset's size where the element has none, and keeps the rest", () => {
    const source =
      '<img src="https://cdn.example/a.png" alt="A"><IMG SRC=https://cdn.example/a.png width=40 height=30>' +
      '<img src="https://other.example/b.png"><img src="https://cdn.example/nosize.png">';
    const { html, metadata } = renderRichtext(source, files, () => false);
    expect(html).toBe(
      '<img width="800" height="600" src="https://cdn.example/a.png" alt="A"><IMG SRC=https://cdn.example/a.png width=40 height=30>' +
        '<img src="https://other.example/b.png"><img src="https://cdn.example/nosize.png">',
    );
    expect(metadata.imagePaths).toEqual([]);
  });
});

describe('the links <RichText> gives its rule', () => {
  it('names the document or alias of a Read API URL, on any host, and nothing of another link', () => {
    expect(linkTarget('https://api.cmft.io/v1/demo/documents/1204?locale=de#top')).toEqual({
      href: 'https://api.cmft.io/v1/demo/documents/1204?locale=de#top',
      document: '1204',
    });
    expect(linkTarget('http://127.0.0.1:4000/v1/demo/alias/home/')).toMatchObject({ alias: 'home' });
    for (const href of ['https://example.com/documents/12', '/v1/demo/documents/', '#v1/demo/documents/3x/more'])
      expect(linkTarget(href)).toEqual({ href });
  });
});

/** Markdown is never rendered here: these renderers render richtext alone. */
const noMarkdown = () => Promise.reject(new Error('no Markdown here'));

describe('FieldRenderer', () => {
  it('checks every asset image before rendering, whatever the quoting of its src', async () => {
    // A real server: the asset files under /ok answer, the others 404.
    const http = createServer((request, response) =>
      response.writeHead(request.url!.startsWith('/ok') ? 200 : 404).end(),
    );
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    const origin = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
    try {
      const urls = ['ok.png', 'gone-double.png', 'gone-single.png', 'gone-bare.png'].map((name) => `${origin}/${name}`);
      const files = new Map(urls.map((url) => [url, { width: 10, height: 10 }]));
      const warnings: string[] = [];
      const renderer = new FieldRenderer(
        { post: { body: { kind: 'richtext', localized: false } } },
        {},
        noMarkdown,
        () => files,
        { warn: (message) => warnings.push(message) },
      );
      const [ok, double, single, bare] = urls;
      const html = `<img src='${ok}'><img src="${double}"><img alt="x" src='${single}'><img src=${bare} alt="y">`;
      const entry = { id: '1', contentType: 'post', fields: { body: { html, plain: '' } } };
      const { rendered: made, unfetched } = (await renderer.render([entry]))[0]!;
      const rendered = made!;
      expect(unfetched).toEqual([double, single, bare]);
      expect(rendered.metadata.imagePaths).toEqual([ok]);
      // Not optimised, but sized as their assets are.
      expect(rendered.html).toContain(`<img width="10" height="10" src="${double}">`);
      expect(rendered.html).toContain(`<img width="10" height="10" alt="x" src='${single}'>`);
      expect(rendered.html).toContain(`<img width="10" height="10" src=${bare} alt="y">`);
      expect(warnings.map((warning) => warning.split(' ')[1])).toEqual([double, single, bare]);
    } finally {
      http.close();
    }
  });
});

describe('FieldRenderer, a load in batches', () => {
  it('asks for an image that fails once in a load, and again in the next load', async () => {
    let asked = 0;
    const http = createServer((_request, response) => {
      asked++;
      response.writeHead(404).end();
    });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/gone.png`;
      const model = { post: { body: { kind: 'richtext' as const, localized: false } } };
      const entry = (id: string) => ({
        id,
        contentType: 'post',
        fields: { body: { html: `<img src="${url}">`, plain: '' } },
      });
      const load = () =>
        new FieldRenderer(model, {}, noMarkdown, () => new Map([[url, { width: 1, height: 1 }]]), { warn: () => {} });
      const first = load();
      const batches = [];
      for (const batch of [['1', '2'], ['3']]) batches.push(await first.render(batch.map(entry)));
      expect(asked).toBe(1);
      expect(batches[1]![0]!.unfetched).toEqual([url]);
      await load().render([entry('1')]);
      expect(asked).toBe(2);
    } finally {
      http.close();
    }
  });
});

describe('render(entry) in a built site', () => {
  let server: ReadApiServer;
  let site: { dir: string; remove(): Promise<void> };
  let output: string;
  /** The folder the server serves the snapshot and its files from. */
  let folder: string;
  const page = (id: string) => readFile(join(site.dir, `dist/news/${id}/index.html`), 'utf8');
  const build = () => runAstro(site.dir, ['build'], { CMFT_BASE_URL: server.url, CMFT_API_KEY: tinyKey });

  beforeAll(async () => {
    const snapshot = tinySnapshot();
    const news = snapshot.documents.find((d: Json) => d.meta.id === '100');
    // A relative src that an asset's file points to is answered absolute by the server.
    news.fields.text.en_US.html =
      '<h2>Crisp apples</h2><p><img src="images/apples.svg" alt="A basket of apples"></p><h2>Crisp apples</h2><p><img src="images/gone.svg" alt="Gone"><img src="https://elsewhere.example/x.png" alt="Elsewhere"></p>';
    // For <RichText> with the site's components: a link to a document, a heading, a table, an element with none.
    snapshot.documents.find((d: Json) => d.meta.id === '102').fields.text = {
      en_US: {
        html:
          '<h2>Orchard &amp; more</h2><p>See <a href=https://api.cmft.io/v1/tiny/documents/100>the apples</a>, ' +
          '<a href="https://api.cmft.io/v1/tiny/documents/999">a gone one</a> and ' +
          '<a href="https://else.example/x?a=1&amp;b=2">elsewhere</a>.</p><table><tr><td>1</td></tr></table>' +
          '<blockquote><p>Quoted <em>well</em></p></blockquote><p><img src="images/apples.svg" alt="Basket"><br></p>' +
          '<h2>Orchard &amp; more</h2><p><mark title=\'say "ripe"\'>Ripe</mark> &lt;now&gt;</p>',
        plain: 'Orchard & more',
      },
    };
    const apples = snapshot.assets.find((a: Json) => a.meta.id === '300');
    // An asset whose file is missing (its URL answers 404), synced because news 101 shows it.
    snapshot.assets.push({
      ...structuredClone(apples),
      meta: { ...apples.meta, id: '302' },
      fields: { ...apples.fields, file: { ...apples.fields.file, url: 'images/gone.svg', fileName: 'gone.svg' } },
    });
    snapshot.documents.find((d: Json) => d.meta.id === '101').fields.images = [
      { meta: { id: '302', contentType: '_asset' } },
    ];
    folder = dirname(snapshotFolder(await mkdtemp(join(tmpdir(), 'rendered-')), snapshot));
    server = await startServer({ paths: [join(folder, 'tiny.json')], watch: false });
    site = await copyFixture('astro-rendered', 'rendered-test');
    const built = await build();
    expect(built.code, built.output).toBe(0);
    output = built.output;
  }, 120_000);

  afterAll(async () => {
    await server?.close();
    await closeAllPools();
    await site?.remove();
    if (folder) await rm(dirname(folder), { recursive: true, force: true });
  });

  it('renders the first richtext field, with its headings for a table of contents', async () => {
    const html = await page('en_US/100');
    expect(html).toContain('<h2 id="crisp-apples">Crisp apples</h2>');
    expect(html).toContain('<h2 id="crisp-apples-1">Crisp apples</h2>');
    expect(html).toMatch(
      /<a data-depth="2" href="#crisp-apples">Crisp apples<\/a><a data-depth="2" href="#crisp-apples-1">/,
    );
    expect(await page('de_DE/101')).toContain('<article>'); // every locale has its entry
  });

  describe("<RichText> with the site's components", () => {
    const custom = (id = '102') => readFile(join(site.dir, `dist/custom/en_US/${id}/index.html`), 'utf8');
    const inside = (html: string, tag: string) => new RegExp(`<${tag}[^>]*>([\\s\\S]*)</${tag}>`).exec(html)![1]!;

    it('renders a, img, h2 and table through their components, and the rest as plain HTML', async () => {
      const article = inside(await custom(), 'article');
      const figure = /<figure[^>]*>.*?<\/figure>/.exec(article)![0];
      expect(article).toBe(
        '<h2 id="orchard--more" data-depth="2"><a href="#orchard--more">#</a> Orchard &amp; more</h2>' +
          '<p>See <a class="link" href="/news/en_US/100/">the apples</a>, ' +
          '<a class="link" href="https://api.cmft.io/v1/tiny/documents/999">a gone one</a> and ' +
          '<a class="link" href="https://else.example/x?a=1&amp;b=2">elsewhere</a>.</p>' +
          '<div class="table"><table><tr><td>1</td></tr></table></div>' +
          `<blockquote><p>Quoted <em>well</em></p></blockquote><p>${figure}<br/></p>` +
          '<h2 id="orchard--more-1" data-depth="2"><a href="#orchard--more-1">#</a> Orchard &amp; more</h2>' +
          '<p><mark title="say &quot;ripe&quot;">Ripe</mark> &lt;now&gt;</p>',
      );
      // The image component gets the asset's URL and size; a mark, which has none, keeps its attribute and text.
      expect(figure).toMatch(
        /^<figure data-optimise="true"><img src="http[^"]+apples\.svg" alt="Basket" width="100" height="80"><figcaption>Basket<\/figcaption><\/figure>$/,
      );
    });

    it("gives the image component every image: one that could not be fetched with its asset's size, one of another host as it is", async () => {
      const article = inside(await custom('100'), 'article');
      expect(article).toContain(
        `<figure data-optimise="false"><img src="${server.origin}/files/tiny/images/gone.svg" alt="Gone" width="100" height="80"><figcaption>Gone</figcaption></figure>`,
      );
      expect(article).toContain(
        '<figure data-optimise="false"><img src="https://elsewhere.example/x.png" alt="Elsewhere"><figcaption>Elsewhere</figcaption></figure>',
      );
    });

    it('gives headings the ids of render(entry).headings, from the entry and from the field alike', async () => {
      const html = await custom();
      const slugs = [...inside(html, 'nav').matchAll(/href="#([^"]*)"/g)].map((match) => match[1]);
      const ids = (part: string) => [...inside(html, part).matchAll(/<h2 id="([^"]*)"/g)].map((match) => match[1]);
      expect(slugs).toEqual(['orchard--more', 'orchard--more-1']);
      expect(ids('article')).toEqual(slugs);
      expect(ids('section')).toEqual(slugs);
      expect(ids('aside')).toEqual(slugs); // the field's own HTML, given the same ids
    });

    it("turns a link to a document into that entry's URL by the site's rule, and keeps the links it leaves", async () => {
      const plain = inside(await custom(), 'section'); // the same links, no rule
      expect(plain).toContain('<a href="https://api.cmft.io/v1/tiny/documents/100">the apples</a>');
      const article = inside(await custom(), 'article');
      expect(article).toContain('<a class="link" href="/news/en_US/100/">the apples</a>');
      // A document the site has no entry of, and a link elsewhere: the rule gives nothing, the link stays.
      expect(article).toContain('<a class="link" href="https://api.cmft.io/v1/tiny/documents/999">a gone one</a>');
      expect(article).toContain('<a class="link" href="https://else.example/x?a=1&amp;b=2">elsewhere</a>');
      expect(await readFile(join(site.dir, 'dist/news/en_US/100/index.html'), 'utf8')).toContain('<article>');
    });

    it("without components: plain HTML, and the asset's image through Astro's image service", async () => {
      const plain = inside(await custom(), 'section');
      expect(plain).toMatch(
        /^<h2 id="orchard--more">Orchard &amp; more<\/h2><p>See <a href="https:\/\/api\.cmft\.io\/v1\/tiny\/documents\/100">the apples<\/a>, /,
      );
      expect(plain).toContain('<table><tr><td>1</td></tr></table><blockquote><p>Quoted <em>well</em></p></blockquote>');
      expect(plain).toMatch(/<img src="\/_astro\/apples_[\w-]+\.svg"[^>]* alt="Basket"[^>]* width="100" height="80">/);
      expect(await page('en_US/102')).toContain('<h2 id="orchard--more">Orchard &amp; more</h2>'); // render(entry) alike
    });

    // The page expects an error (@ts-expect-error) where it gives a heading component for images.
    it('astro check finds no error in the page, and a component whose props do not fit is one', async () => {
      const { code, output } = await runAstro(site.dir, ['check'], {
        CMFT_BASE_URL: server.url,
        CMFT_API_KEY: tinyKey,
      });
      expect(output).toMatch(/0 errors/);
      expect(code, output).toBe(0);
    }, 180_000);
  });

  /** The page key of a news entry, as the last build left Astro's store. */
  const cacheKeyOf = async (id: string): Promise<unknown> => {
    const store = devalue.parse(await readFile(join(site.dir, 'node_modules/.astro/data-store.json'), 'utf8')) as Map<
      string,
      Map<string, { data: { cacheKey: string } }>
    >;
    return store.get('news')?.get(id)?.data.cacheKey;
  };

  it("optimises the images of the repository's assets through Astro's pipeline, with their size", async () => {
    const html = await page('en_US/100');
    const image = /<img [^>]*alt="A basket of apples"[^>]*>/.exec(html)?.[0] ?? '';
    expect(image).toMatch(/src="\/_astro\/apples_[\w-]+\.svg"/);
    expect(image).toContain('width="100"');
    expect(image).toContain('height="80"');
    expect(html).toContain('<img src="https://elsewhere.example/x.png" alt="Elsewhere">');
  });

  it("gives a richtext's headings the ids and texts Astro's Markdown gives the same HTML", async () => {
    const idsOf = (html: string) => [...html.matchAll(/<h[1-6]\b[^>]*\sid="([^"]*)"/gi)].map((match) => match[1]);
    const source = await readFile(join(site.dir, 'src/headings.md'), 'utf8');
    const astro = JSON.parse(await readFile(join(site.dir, 'dist/headings.json'), 'utf8'));
    const ours = renderRichtext(source, new Map(), () => true);
    expect(ours.metadata.headings).toEqual(astro.headings);
    expect(idsOf(ours.html)).toEqual(idsOf(astro.html));
    expect(idsOf(ours.html)).toHaveLength(source.match(/<h[1-6]/g)!.length);
  });

  it('does not optimise an image that cannot be fetched, but sizes it, with a warning naming the document and field', async () => {
    expect(await page('en_US/100')).toContain(
      `<img width="100" height="80" src="${server.origin}/files/tiny/images/gone.svg" alt="Gone">`,
    );
    expect(output, output).toContain(
      `Image ${server.origin}/files/tiny/images/gone.svg in field text of document 100 cannot be fetched (HTTP 404): it is not optimised (it keeps its URL, with its asset's size)`,
    );
  });

  it('warns again in every build that leaves it so, and optimises it in the first build after it can be fetched', async () => {
    const warning = `Image ${server.origin}/files/tiny/images/gone.svg in field text of document 100 cannot be fetched (HTTP 404)`;
    const again = await build();
    expect(again.code, again.output).toBe(0);
    expect(again.output).toContain(warning);
    expect(await page('en_US/100')).toContain(
      `<img width="100" height="80" src="${server.origin}/files/tiny/images/gone.svg" alt="Gone">`,
    );
    const unfetchedKey = await cacheKeyOf('en_US/100');
    expect(await cacheKeyOf('en_US/100')).toBe(unfetchedKey);

    await copyFile(join(folder, 'images/apples.svg'), join(folder, 'images/gone.svg'));
    const fixed = await build();
    expect(fixed.code, fixed.output).toBe(0);
    expect(fixed.output).not.toContain('cannot be fetched');
    // An incremental build renders the page again: its key changed with the image it shows now.
    expect(await cacheKeyOf('en_US/100')).not.toBe(unfetchedKey);
    expect(await page('en_US/100')).toMatch(
      /<img [^>]*src="\/_astro\/gone_[\w-]+\.svg"[^>]*alt="Gone"|<img [^>]*alt="Gone"[^>]*src="\/_astro\/gone_[\w-]+\.svg"/,
    );
  }, 120_000);
});
