import GithubSlugger from 'github-slugger';
import { request } from 'undici';
import type { Model, TypeModel } from '../model/records.ts';
import { fieldAt, valueAt } from '../model/sections.ts';
import { attributesOf, elementsOf, headingDepth, parseHtml, pixels, textOf } from './html.ts';

/**
 * A richtext field as Astro's `rendered` content, so `render(entry)` and `<Content />` work:
 * its HTML, its headings (each given the id and text Astro's Markdown would give it, so a
 * table of contents links alike to both) and the images that show the repository's assets,
 * which Astro's image pipeline then optimises as it does the images of Markdown (the
 * `__ASTRO_IMAGE_` attribute it replaces when the entry is rendered).
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

/** The `src` of each image in the HTML. */
const imageSources = (html: string): string[] =>
  !/<img/i.test(html)
    ? []
    : [...elementsOf(parseHtml(html))].flatMap((element) =>
        element.tagName === 'img' ? (attributesOf(element).get('src') ?? []) : [],
      );

/** Whether the HTML may hold a heading or an image: without one, rendering leaves it as it is, unparsed. */
const mayEdit = (html: string) => /<(?:h[1-6]|img)/i.test(html);

/**
 * Renders a richtext value, read as a browser reads it (html.ts): a heading or an image inside a
 * comment is none. The HTML is kept as it is but for the start tags of headings and images. Each heading gets the id Astro's Markdown gives it (the heading-ids
 * plugin of `@astrojs/markdown-satteri`): GitHub's slug of its text, numbered past the slugs
 * already made (`step`, `step-1`, `step-2`); an id it has is kept, even an empty one, and, as
 * in Markdown, not counted, so a later heading may slug to it. Images whose `src` is the file
 * of an asset (in `files`) and that `usable` accepts become Astro image references with the
 * asset's size (the element's `width` and `height` first); those it refuses keep their tag, given
 * the asset's `width` and `height` where they have none; every other image is left as it is.
 *
 * @example
 * renderRichtext('<h2>Step</h2><h2>Prices&nbsp;2024</h2>', new Map(), () => true).metadata.headings
 * // [{ depth: 2, slug: 'step', text: 'Step' }, { depth: 2, slug: 'prices2024', text: 'Prices\u00a02024' }]
 */
export function renderRichtext(html: string, files: AssetFiles, usable: (url: string) => boolean): Rendered {
  const headings: Heading[] = [];
  const imagePaths: string[] = [];
  const slugger = new GithubSlugger();
  // The source is kept as it is but for these edits of start tags, so the HTML stays the editor's.
  const edits: { start: number; end: number; text: string }[] = [];
  for (const element of mayEdit(html) ? elementsOf(parseHtml(html)) : []) {
    const tag = element.sourceCodeLocation?.startTag;
    if (!tag) continue; // an element the parser implies (a table's tbody): the source has no tag of it
    const attributes = attributesOf(element);
    const depth = headingDepth(element.tagName);
    if (depth !== undefined) {
      const text = textOf(element);
      const given = attributes.get('id');
      const id = given ?? slugger.slug(text);
      headings.push({ depth, slug: id, text });
      const after = tag.startOffset + 3; // after `<h2`
      if (given === undefined) edits.push({ start: after, end: after, text: ` id="${escapeAttribute(id)}"` });
      continue;
    }
    const src = element.tagName === 'img' ? attributes.get('src') : undefined;
    const file = src === undefined ? undefined : files.get(src);
    if (!src || !file) continue;
    const optimise = usable(src);
    const width = pixels(attributes.get('width')) ?? file.width;
    const height = pixels(attributes.get('height')) ?? file.height;
    if (!width || !height) continue;
    if (!optimise) {
      // Shown from its URL, it still takes its asset's size: the page keeps its layout, and a
      // component of <RichText> gets the size as it does an optimised image's.
      const missing = Object.entries({ width, height }).filter(([name]) => !attributes.has(name));
      const after = tag.startOffset + 4; // after `<img`
      const text = missing.map(([name, value]) => ` ${name}="${value}"`).join('');
      if (text) edits.push({ start: after, end: after, text });
      continue;
    }
    attributes.delete('src');
    const image = { ...Object.fromEntries(attributes), src, alt: attributes.get('alt') ?? '', width, height };
    imagePaths.push(src);
    edits.push({
      start: tag.startOffset,
      end: tag.endOffset,
      text: `<img __ASTRO_IMAGE_="${escapeAttribute(JSON.stringify(image))}">`,
    });
  }
  let out = html;
  for (const { start, end, text } of edits.sort((a, b) => b.start - a.start))
    out = out.slice(0, start) + text + out.slice(end);
  return { html: out, metadata: { headings, imagePaths: [...new Set(imagePaths)] } };
}

/**
 * The checks of image URLs under way or passed, per process: a URL that can be fetched is asked
 * once; one that cannot is asked again by the next load (a dev refresh), as it may be fixed.
 */
const checked = new Map<string, Promise<string | undefined>>();

/** Asks each URL (HEAD, or GET when HEAD is refused) whether it can be fetched; returns why not, by URL. */
async function unfetchable(urls: Iterable<string>): Promise<Map<string, string>> {
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

/** What the loader logs through. */
interface Logger {
  warn(message: string): void;
}

/** The entries' data as the renderer reads it. */
interface RenderableEntry {
  id: string;
  contentType: string;
  fields: Record<string, unknown>;
}

/** The HTML of a richtext field's value (`{ html, plain }`), if it is one. */
export const richtextOf = (value: unknown): string | undefined =>
  value && typeof value === 'object' && typeof (value as { html?: unknown }).html === 'string'
    ? (value as { html: string }).html
    : undefined;

/**
 * Renders one richtext field of each entry a loader makes: `field` names it, `false` renders
 * none, and by default it is the content type's first richtext field. Images of the repository's
 * assets that cannot be fetched are not optimised (Astro's image pipeline would fail the build on
 * them) but keep their asset's size, with a warning naming the document and field.
 */
export class RichtextRenderer {
  readonly #model: Model;
  readonly #field: string | false | undefined;
  readonly #files: () => AssetFiles;
  readonly #logger: Logger;
  #filesRead: AssetFiles | undefined;
  #failures = new Map<string, string>();
  readonly #warned = new Set<string>();

  constructor(model: Model, field: string | false | undefined, files: () => AssetFiles, logger: Logger) {
    this.#model = model;
    this.#field = field;
    this.#files = files;
    this.#logger = logger;
  }

  /** The field rendered for a content type, if any. */
  fieldOf(contentType: string): string | undefined {
    if (this.#field === false) return undefined;
    const field = this.#field ?? firstRichtextField(this.#model, contentType);
    return field !== undefined && fieldAt(this.#model[contentType], field)?.kind === 'richtext' ? field : undefined;
  }

  /** Checks, once each in a load, the images of assets in the rendered fields of these entries. */
  async prepare(entries: Iterable<RenderableEntry>): Promise<void> {
    const files = this.#assetFiles();
    const urls: string[] = [];
    for (const entry of entries) {
      const field = this.fieldOf(entry.contentType);
      const html = field === undefined ? undefined : richtextOf(valueAt(entry.fields, field));
      if (html === undefined) continue;
      // A URL that failed in this load is not asked again (a load makes its entries in batches).
      for (const src of imageSources(html)) if (files.has(src) && !this.#failures.has(src)) urls.push(src);
    }
    if (urls.length > 0) for (const [url, why] of await unfetchable(urls)) this.#failures.set(url, why);
  }

  /**
   * The entry's rendered field (undefined when it has none), and the asset images it leaves
   * unoptimised because they cannot be fetched: an entry with any is to be made again by the
   * next build, which asks for them again.
   */
  render(entry: RenderableEntry): { rendered: Rendered | undefined; unfetched: string[] } {
    const field = this.fieldOf(entry.contentType);
    const html = field === undefined ? undefined : richtextOf(valueAt(entry.fields, field));
    const unfetched: string[] = [];
    if (html === undefined) return { rendered: undefined, unfetched };
    const rendered = renderRichtext(html, this.#assetFiles(), (url) => {
      const why = this.#failures.get(url);
      if (why === undefined) return true;
      unfetched.push(url);
      const key = `${entry.id}|${field}|${url}`;
      if (!this.#warned.has(key)) {
        this.#warned.add(key);
        this.#logger.warn(
          `Image ${url} in field ${field} of document ${entry.id} cannot be fetched (${why}): it is not ` +
            `optimised (it keeps its URL, with its asset's size)`,
        );
      }
      return false;
    });
    return { rendered, unfetched };
  }

  #assetFiles(): AssetFiles {
    return (this.#filesRead ??= this.#files());
  }
}
