import { fieldAt, type Model } from '../model/records.ts';
import { valueAt } from '../model/sections.ts';
import type { ComfortableLoaderOptions } from './loader-options.ts';
import {
  type AssetFiles,
  firstRichtextField,
  type Heading,
  imageSources,
  type Rendered,
  renderRichtext,
  richtextOf,
  unfetchable,
} from './rendered.ts';

/**
 * The fields a loader renders for each entry it makes: the one `render(entry)` shows (richtext,
 * or Markdown when the field named holds strings) and the other Markdown fields the `markdown`
 * option names. Markdown goes through the site's own pipeline (Astro's `renderMarkdown`), then,
 * as richtext, through the checks of the images of the repository's assets.
 */

/** A Markdown field rendered by the site's Markdown pipeline: `data.markdown.<field>`. */
export interface RenderedMarkdown {
  /** Its HTML; the images of the repository's assets marked for Astro's image pipeline, as `<RichText>` reads them. */
  html: string;
  /** Its headings, with the ids the site's pipeline gave them. */
  headings: Heading[];
}

/** Renders Markdown with the site's pipeline: the `renderMarkdown` of Astro's loader context. */
export type MarkdownPipeline = (source: string) => Promise<{ html: string; metadata?: { headings?: Heading[] } }>;

/**
 * What an entry gets: its content for `render(entry)`, its other Markdown fields, and the asset
 * images left unoptimised.
 */
interface RenderedFields {
  rendered: Rendered | undefined;
  markdown: Record<string, RenderedMarkdown> | undefined;
  /**
   * Asset images that could not be fetched: an entry with any is to be made again by the next
   * build, which asks again.
   */
  unfetched: string[];
}

interface Logger {
  warn(message: string): void;
}

/** The entries' data as the renderer reads it. */
interface RenderableEntry {
  id: string;
  contentType: string;
  fields: Record<string, unknown>;
}

/** The kinds of a string: a Markdown source that looks like a date or a colour is still one. */
const stringKinds = new Set(['text', 'date', 'color']);

/**
 * A field's value always starts the Markdown: a source that begins with `---` (a rule) or `+++`
 * is no file with frontmatter, which an empty frontmatter before it says to Astro's pipeline.
 */
const noFrontmatter = '---\n---\n';

export class FieldRenderer {
  readonly #model: Model;
  readonly #field: string | false | undefined;
  readonly #markdown: readonly string[];
  readonly #pipeline: MarkdownPipeline;
  readonly #files: () => AssetFiles;
  readonly #logger: Logger;
  #filesRead: AssetFiles | undefined;
  readonly #failures = new Map<string, string>();
  readonly #warned = new Set<string>();
  /** How many Markdown values this load rendered. */
  markdownRendered = 0;

  constructor(
    model: Model,
    options: Pick<ComfortableLoaderOptions, 'render' | 'markdown'>,
    pipeline: MarkdownPipeline,
    files: () => AssetFiles,
    logger: Logger,
  ) {
    this.#model = model;
    this.#field = options.render;
    this.#markdown = options.markdown ?? [];
    this.#pipeline = pipeline;
    this.#files = files;
    this.#logger = logger;
  }

  /**
   * The field rendered for `render(entry)` in a content type, if any: a richtext field, or one
   * that holds strings (Markdown) when `render` names it. No value shows Markdown, so the site
   * names it; by default the content type's first richtext field is rendered.
   */
  fieldOf(contentType: string): { path: string; markdown: boolean } | undefined {
    if (this.#field === false) return undefined;
    const path = this.#field ?? firstRichtextField(this.#model, contentType);
    const kind = path === undefined ? undefined : fieldAt(this.#model[contentType], path)?.kind;
    if (kind === 'richtext') return { path: path!, markdown: false };
    return this.#field !== undefined && kind !== undefined && stringKinds.has(kind)
      ? { path: this.#field, markdown: true }
      : undefined;
  }

  /** Whether entries of these content types render Markdown (so the loader's summary counts it). */
  rendersMarkdown(contentTypes: Iterable<string>): boolean {
    if (this.#markdown.length > 0) return true;
    for (const contentType of contentTypes) if (this.fieldOf(contentType)?.markdown) return true;
    return false;
  }

  /** Renders the fields of a batch of entries, asking once for each asset image whether it can be fetched. */
  async render(entries: readonly RenderableEntry[]): Promise<RenderedFields[]> {
    const sources = await Promise.all(entries.map((entry) => this.#sources(entry)));
    const files = (this.#filesRead ??= this.#files());
    const urls = sources.flatMap((fields) =>
      fields.flatMap(({ html, markdown }) => imageSources(html, markdown).filter((src) => files.has(src))),
    );
    // A URL that failed in this load is not asked again (a load makes its entries in batches).
    const asked = urls.filter((url) => !this.#failures.has(url));
    if (asked.length > 0) for (const [url, why] of await unfetchable(asked)) this.#failures.set(url, why);
    return entries.map((entry, i) => {
      const unfetched: string[] = [];
      const out: RenderedFields = { rendered: undefined, markdown: undefined, unfetched };
      for (const { path, html, markdown, headings, main } of sources[i]!) {
        const edited = renderRichtext(html, files, (url) => this.#usable(url, entry, path, unfetched), markdown);
        const rendered = markdown ? { html: edited.html, metadata: { ...edited.metadata, headings } } : edited;
        if (main) out.rendered = rendered;
        else (out.markdown ??= {})[path] = { html: rendered.html, headings: rendered.metadata.headings };
      }
      if (this.#markdown.length > 0) out.markdown ??= {};
      return out;
    });
  }

  /** The HTML of each field an entry renders, Markdown through the site's pipeline. */
  async #sources(entry: RenderableEntry) {
    const main = this.fieldOf(entry.contentType);
    const fields = [
      ...(main ? [{ ...main, main: true }] : []),
      ...this.#markdown.map((path) => ({ path, markdown: true, main: false })),
    ];
    const out = [];
    for (const { path, markdown, main } of fields) {
      const value = valueAt(entry.fields, path);
      // A richtext field without a value is not rendered; a Markdown field without one is, empty.
      let html = markdown ? '' : richtextOf(value);
      let headings: Heading[] = [];
      if (html === undefined) continue;
      if (markdown && typeof value === 'string' && value !== '') {
        const made = await this.#pipeline(noFrontmatter + value);
        this.markdownRendered++;
        html = made.html;
        headings = made.metadata?.headings ?? [];
      } else if (markdown && value != null && value !== '') this.#notMarkdown(entry, path);
      out.push({ path, html, markdown, headings, main });
    }
    return out;
  }

  /** A field the `markdown` option names that holds something else than Markdown source: told once per content type. */
  #notMarkdown(entry: RenderableEntry, path: string): void {
    const key = `${entry.contentType}|${path}`;
    if (this.#warned.has(key)) return;
    this.#warned.add(key);
    this.#logger.warn(
      `The markdown option names the field ${path}, which holds no Markdown source (a string) in document ` +
        `${entry.id} of content type ${entry.contentType}: it is rendered empty; name only Markdown fields ` +
        `there (a richtext field is rendered by the render option, or shown from its html)`,
    );
  }

  /** Whether an asset image can go through Astro's image pipeline; one that cannot be fetched is told once. */
  #usable(url: string, entry: RenderableEntry, field: string, unfetched: string[]): boolean {
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
  }
}
