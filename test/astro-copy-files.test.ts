import { describe, expect, it } from 'vitest';
import { CopyFiles } from '../src/astro/copy-files.ts';

/**
 * What a site built from a copy links to: a file asset's `src` and the links of richtext become
 * paths of the site under Astro's `base`; images, and the images Astro optimises in rendered
 * richtext, keep the in-process server's URL (Astro downloads them while it builds).
 * (test/pull-site-files.test.ts builds such a site and checks its links.)
 */

const files = new CopyFiles({
  origin: 'http://127.0.0.1:23443',
  repository: 'kitchen',
  base: '/shop/',
  file: '/copy/kitchen.json',
  files: new Set(),
});
const served = (path: string) => `http://127.0.0.1:23443/files/kitchen/${path}`;
const site = (path: string) => `/shop/_comfortable/files/kitchen/${path}`;

describe('the links of a copy', () => {
  it("are paths of the site under Astro's base, with or without its trailing slash", () => {
    expect(files.site).toBe('/shop/_comfortable/files/kitchen/');
    expect(
      new CopyFiles({ origin: 'http://127.0.0.1:1', repository: 'a b', base: '/', file: '/x.json', files: new Set() })
        .site,
    ).toBe('/_comfortable/files/a%20b/');
    expect(
      new CopyFiles({ origin: 'http://127.0.0.1:1', repository: 'a', base: '/docs', file: '/x.json', files: new Set() })
        .site,
    ).toBe('/docs/_comfortable/files/a/');
  });

  it("make a file asset's src a path of the site, and leave images, other hosts and other fields", () => {
    const card = { kind: 'file', id: '302', src: served('docs/card%20v2.pdf'), alt: 'Card' };
    const image = { kind: 'image', id: '300', src: served('images/a.png'), width: 10, height: 10, alt: '' };
    const elsewhere = { kind: 'file', id: '304', src: 'https://cdn.example/x.pdf', alt: '' };
    const fields = {
      title: 'Apples',
      images: [image, card, elsewhere],
      tags: ['a'],
      author: { id: '200', collection: 'authors' },
    };
    const out = files.fields(fields);
    expect(out.images).toEqual([image, { ...card, src: site('docs/card%20v2.pdf') }, elsewhere]);
    expect([out.title, out.tags, out.author]).toEqual([fields.title, fields.tags, fields.author]);
    expect(fields.images[1]).toBe(card); // the entry it came from is left as it was
    const plain = { title: 'Pears', images: [image] };
    expect(files.fields(plain)).toBe(plain); // nothing to rewrite: the same object
  });

  it("rewrite every link of a richtext field's raw HTML, images included, and not its plain text", () => {
    const text = {
      html: `<a href="${served('docs/card.pdf')}">Card</a><img src="${served('images/a.png')}">`,
      plain: `Card ${served('docs/card.pdf')}`,
    };
    expect(files.fields({ text }).text).toEqual({
      html: `<a href="${site('docs/card.pdf')}">Card</a><img src="${site('images/a.png')}">`,
      plain: text.plain,
    });
  });

  it('rewrite the rendered HTML but the images Astro optimises, whose metadata is kept', () => {
    const optimised = `<img __ASTRO_IMAGE_="{&quot;src&quot;:&quot;${served('images/a.png')}&quot;,&quot;width&quot;:10,&quot;height&quot;:10}">`;
    const rendered = {
      html: `<p>${optimised}<img src="${served('images/plain.svg')}"></p>`,
      metadata: { headings: [], imagePaths: [served('images/a.png')] },
    };
    expect(files.rendered(rendered)).toEqual({
      html: `<p>${optimised}<img src="${site('images/plain.svg')}"></p>`,
      metadata: rendered.metadata,
    });
    const none = { html: '<p>Nothing</p>', metadata: { headings: [], imagePaths: [] } };
    expect(files.rendered(none)).toBe(none);
    expect(files.rendered(undefined)).toBeUndefined();
  });
});
