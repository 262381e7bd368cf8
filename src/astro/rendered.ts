import GithubSlugger from 'github-slugger';
import { request } from 'undici';
import type { Model, TypeModel } from '../model/records.ts';
import { attributesOf, elementsOf, headingDepth, parseHtml, pixels, textOf } from './html.ts';

/**
 * A richtext field as Astro's `rendered` content, so `render(entry)` and `<Content />` work:
 * its HTML, its headings (each given the id and text Astro's Markdown would give it, so a
 * table of contents links alike to both) and the images that show the repository's assets,
 * which Astro's image pipeline then optimises as it does the images of Markdown (the
 * `__ASTRO_IMAGE_` attribute it replaces when the entry is rendered). The HTML Astro's Markdown
 * pipeline makes of a Markdown field gets the same treatment of its images (renderer.ts).
 */

export interface Heading {
  depth: number;
  slug: string;
  text: string;
}

export interface Rendered {
  html: string;
  metadata: { headings: Heading[]; imagePaths: string[] };
}

/** What the cache knows of the file of each asset, by its URL. */
export type AssetFiles = Map<string, { width?: number | undefined; height?: number | undefined }>;

/**
 * The richtext field a loader renders by default: the content type's first, by its path (`content.body` inside a
 * section).
 */
export function firstRichtextField(model: Model, contentType: string): string | undefined {
  const first = (fields: TypeModel, prefix: string): string | undefined => {
    for (const [name, field] of Object.entries(fields)) {
      if (field.kind === 'richtext') return prefix + name;
      const inner = field.kind === 'section' ? first(field.fields ?? {}, `${prefix}${name}.`) : undefined;
      if (inner !== undefined) return inner;
    }
    return undefined;
  };
  return first(model[contentType] ?? {}, '');
}

const escapeAttribute = (text: string) => text.replace(/&/g, '&amp;').replace(/"/g, '&quot;');

/** The `src` of each image in the HTML (with `markdown`, of those Astro's Markdown pipeline marked too). */
export const imageSources = (html: string, markdown = false): string[] =>
  !/<img/i.test(html)
    ? []
    : [...elementsOf(parseHtml(html))].flatMap((element) => {
        if (element.tagName !== 'img') return [];
        const attributes = attributesOf(element);
        const marker = markdown ? attributes.get('__astro_image_') : undefined;
        return (marker === undefined ? attributes : unmarked(marker)).get('src') ?? [];
      });

/**
 * Whether the HTML may hold what rendering edits (a heading or an image; of Markdown, whose headings
 * are the pipeline's, an image): without one, rendering leaves it as it is, unparsed.
 */
const mayEdit = (html: string, markdown: boolean) => (markdown ? /<img/i : /<(?:h[1-6]|img)/i).test(html);

/**
 * Renders a richtext value, read as a browser reads it (html.ts): a heading or an image inside a
 * comment is none. The HTML is kept as it is but for the start tags of headings and images. Each
 * heading gets the id Astro's Markdown gives it (the heading-ids plugin of
 * `@astrojs/markdown-satteri`): GitHub's slug of its text, numbered past the slugs
 * already made (`step`, `step-1`, `step-2`); an id it has is kept, even an empty one, and, as
 * in Markdown, not counted, so a later heading may slug to it. Images whose `src` is the file
 * of an asset (in `files`) and that `usable` accepts become Astro image references with the
 * asset's size (the element's `width` and `height` first); those it refuses keep their tag, given
 * the asset's `width` and `height` where they have none; every other image is left as it is.
 *
 * With `markdown`, the HTML is what Astro's Markdown pipeline made: its headings are left as
 * they are (the site's pipeline gave them their ids), and an image it marked for its own image
 * handling (`__ASTRO_IMAGE_`: an image of an allowed host, whose size it would fetch, or a
 * relative path, which a field has no folder for) is read back as the element it was, so the
 * images of the repository's assets are sized and checked as in richtext, and the others shown
 * as written.
 *
 * @example
 * renderRichtext('<h2>Step</h2><h2>Prices&nbsp;2024</h2>', new Map(), () => true).metadata.headings
 * // [{ depth: 2, slug: 'step', text: 'Step' }, { depth: 2, slug: 'prices2024', text: 'Prices\u00a02024' }]
 */
export function renderRichtext(
  html: string,
  files: AssetFiles,
  usable: (url: string) => boolean,
  markdown = false,
): Rendered {
  const headings: Heading[] = [];
  const imagePaths: string[] = [];
  const slugger = new GithubSlugger();
  // The source is kept as it is but for these edits of start tags, so the HTML stays the editor's.
  const edits: { start: number; end: number; text: string }[] = [];
  for (const element of mayEdit(html, markdown) ? elementsOf(parseHtml(html)) : []) {
    const tag = element.sourceCodeLocation?.startTag;
    if (!tag) continue; // an element the parser implies (a table's tbody): the source has no tag of it
    let attributes = attributesOf(element);
    const depth = headingDepth(element.tagName);
    if (depth !== undefined) {
      if (markdown) continue;
      const text = textOf(element);
      const given = attributes.get('id');
      const id = given ?? slugger.slug(text);
      headings.push({ depth, slug: id, text });
      const after = tag.startOffset + 3; // after `<h2`
      if (given === undefined) edits.push({ start: after, end: after, text: ` id="${escapeAttribute(id)}"` });
      continue;
    }
    if (element.tagName !== 'img') continue;
    const marked = markdown ? attributes.get('__astro_image_') : undefined;
    if (marked !== undefined) attributes = unmarked(marked);
    const whole = (text: string) => edits.push({ start: tag.startOffset, end: tag.endOffset, text });
    const url = attributes.get('src');
    const file = url === undefined ? undefined : files.get(url);
    const width = pixels(attributes.get('width')) ?? file?.width;
    const height = pixels(attributes.get('height')) ?? file?.height;
    if (!url || !file || !width || !height) {
      if (marked !== undefined) whole(imgTag(attributes));
      continue;
    }
    if (!usable(url)) {
      // Shown from its URL, it still takes its asset's size: the page keeps its layout, and a
      // component of <RichText> gets the size as it does an optimised image's.
      const missing = Object.entries({ width, height }).filter(([name]) => !attributes.has(name));
      if (marked !== undefined) {
        whole(imgTag(new Map([...attributes, ...missing.map(([name, value]) => [name, String(value)] as const)])));
        continue;
      }
      const after = tag.startOffset + 4; // after `<img`
      const text = missing.map(([name, value]) => ` ${name}="${value}"`).join('');
      if (text) edits.push({ start: after, end: after, text });
      continue;
    }
    attributes.delete('src');
    const image = { ...Object.fromEntries(attributes), src: url, alt: attributes.get('alt') ?? '', width, height };
    imagePaths.push(url);
    whole(`<img __ASTRO_IMAGE_="${escapeAttribute(JSON.stringify(image))}">`);
  }
  let out = html;
  for (const { start, end, text } of edits.sort((a, b) => b.start - a.start))
    out = out.slice(0, start) + text + out.slice(end);
  return { html: out, metadata: { headings, imagePaths: [...new Set(imagePaths)] } };
}

/**
 * The attributes of an image Astro's Markdown pipeline marked: its JSON, less what only Astro's
 * image handling reads, with the `src` it decoded (`decodeURI`) written as a URL again.
 */
function unmarked(marker: string): Map<string, string> {
  const { index: _index, inferSize: _inferSize, src, ...rest } = JSON.parse(marker) as Record<string, unknown>;
  const attributes = new Map<string, string>([['src', encodeURI(String(src ?? ''))]]);
  for (const [name, value] of Object.entries(rest)) if (value != null) attributes.set(name, String(value));
  return attributes;
}

const imgTag = (attributes: Map<string, string>) =>
  `<img ${[...attributes].map(([name, value]) => `${name}="${escapeAttribute(value)}"`).join(' ')}>`;

/**
 * The checks of image URLs under way or passed, per process: a URL that can be fetched is asked
 * once; one that cannot is asked again by the next load (a dev refresh), as it may be fixed.
 */
const checked = new Map<string, Promise<string | undefined>>();

/** Asks each URL (HEAD, or GET when HEAD is refused) whether it can be fetched; returns why not, by URL. */
export async function unfetchable(urls: Iterable<string>): Promise<Map<string, string>> {
  const failures = new Map<string, string>();
  await Promise.all(
    [...new Set(urls)].map(async (url) => {
      let reason = checked.get(url);
      if (!reason) checked.set(url, (reason = reasonUnfetchable(url)));
      const why = await reason;
      if (why === undefined) return;
      failures.set(url, why);
      checked.delete(url);
    }),
  );
  return failures;
}

async function reasonUnfetchable(url: string): Promise<string | undefined> {
  try {
    for (const method of ['HEAD', 'GET'] as const) {
      const response = await request(url, { method, headersTimeout: 10_000, bodyTimeout: 10_000 });
      await response.body.dump();
      if (response.statusCode < 400) return undefined;
      if (method === 'GET' || ![405, 501].includes(response.statusCode)) return `HTTP ${response.statusCode}`;
    }
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

/** The HTML of a richtext field's value (`{ html, plain }`), if it is one. */
export const richtextOf = (value: unknown): string | undefined =>
  value && typeof value === 'object' && typeof (value as { html?: unknown }).html === 'string'
    ? (value as { html: string }).html
    : undefined;
