import { constants } from 'node:fs';
import { copyFile, mkdir } from 'node:fs/promises';
import { type IncomingMessage, request as httpRequest, type ServerResponse } from 'node:http';
import { dirname, join, resolve, sep } from 'node:path';
import pLimit from 'p-limit';
import { type CacheReader, openCache } from '../cache/index.ts';
import { fileBounds, locateFile } from '../server/files.ts';
import type { FileLinks } from '../entries/file-links.ts';

/**
 * A copy's files as files of the site. A build from a copy (the `snapshot` option) asks a server
 * that lives in the build's process and ends with it, so nothing the site keeps may point at it:
 *
 * - the `src` of a file asset (`kind: 'file'`: a PDF, a ZIP, a video) and every link to the
 *   copy's files in richtext HTML become paths of the site, `<base>_comfortable/files/<repo>/<path>`;
 * - `astro build` copies those files into the output folder, from the copy's folder (with the
 *   checks the server's `/files` makes), and `astro dev` serves the same paths from the server.
 *
 * Images (`kind: 'image'`) and the images of rendered richtext that Astro optimises keep the
 * server's URL: Astro downloads them while it builds, as it does the CMS's.
 */

interface CopyFilesOptions {
  /** The origin of the in-process server, such as `http://127.0.0.1:23443`. */
  origin: string;
  repository: string;
  /** Astro's `base`. */
  base: string;
  /** The snapshot file (absolute): its files are beside it. */
  file: string;
  /** The files its assets point to, relative to its folder: no other is copied (as the server serves no other). */
  files: ReadonlySet<string>;
}

/** An attribute Astro's image pipeline reads the image of rendered richtext from: kept. */
const astroImage = /(__ASTRO_IMAGE_="[^"]*")/;

/** The links to a copy's files, made paths of the site, and those files copied into a build or served in dev. */
export class CopyFiles implements FileLinks {
  /** `http://127.0.0.1:23443/files/<repo>/` */
  readonly served: string;
  /** `/<base>/_comfortable/files/<repo>/` */
  readonly site: string;
  /** `/_comfortable/files/<repo>/`: the site's path without the base. */
  readonly #unbased: string;
  readonly #options: CopyFilesOptions;

  constructor(options: CopyFilesOptions) {
    this.#options = options;
    const repo = `${encodeURIComponent(options.repository)}/`;
    this.served = `${options.origin}/files/${repo}`;
    this.#unbased = `/_comfortable/files/${repo}`;
    this.site = `${options.base.replace(/\/?$/, '')}${this.#unbased}`;
  }

  /** HTML with every link to the copy's files made a path of the site. */
  html(html: string): string {
    return html.replaceAll(this.served, this.site);
  }

  fields(fields: Record<string, unknown>): Record<string, unknown> {
    let out: Record<string, unknown> | undefined;
    for (const [name, value] of Object.entries(fields)) {
      const changed = this.#value(value);
      if (changed !== value) (out ??= { ...fields })[name] = changed;
    }
    return out ?? fields;
  }

  /** A field's value with its file assets and richtext links rewritten (the same object when nothing is). */
  #value(value: unknown): unknown {
    if (Array.isArray(value)) {
      const items = value.map((item) => {
        const asset = item as { kind?: unknown; src?: unknown } | null;
        return asset?.kind === 'file' && typeof asset.src === 'string' && asset.src.startsWith(this.served)
          ? { ...asset, src: this.html(asset.src) }
          : item;
      });
      return items.some((item, i) => item !== value[i]) ? items : value;
    }
    const html = (value as { html?: unknown } | null)?.html;
    if (typeof html !== 'string' || typeof (value as { plain?: unknown }).plain !== 'string') return value;
    const rewritten = this.html(html);
    return rewritten === html ? value : { ...(value as object), html: rewritten };
  }

  rendered<T extends { html: string }>(rendered: T | undefined): T | undefined {
    if (!rendered?.html.includes(this.served)) return rendered;
    const html = rendered.html
      .split(astroImage)
      .map((part, i) => (i % 2 === 1 ? part : this.html(part)))
      .join('');
    return { ...rendered, html };
  }

  /**
   * The files the site's links point at, relative to the snapshot's folder: those of the file
   * assets the cache holds, and those richtext links to. Only files of the snapshot's assets: a
   * link written by hand may name any other (the server serves none).
   */
  #linked(cache: CacheReader): string[] {
    const urls = new Set(cache.urlsInDocuments(this.served));
    for (const [url, { width, height }] of cache.assetFiles())
      if (url.startsWith(this.served) && !((width ?? 0) > 0 && (height ?? 0) > 0)) urls.add(url);
    const paths = [...urls].map((url) => {
      try {
        return url.slice(this.served.length).split('/').map(decodeURIComponent).join('/');
      } catch {
        return ''; // not a path the server gave
      }
    });
    return [...new Set(paths)].filter((path) => this.#options.files.has(path)).sort();
  }

  /**
   * Copies the files the site links to into `outDir` (the build's output folder for the
   * browser), under the paths its links give. Returns the paths copied and, by path, why a file
   * could not be (the server would answer 404 for it too).
   */
  async copyInto(outDir: string, cache: CacheReader): Promise<{ copied: string[]; failed: Map<string, string> }> {
    const folder = dirname(this.#options.file);
    const bounds = await fileBounds(folder, { files: () => [this.#options.file], folders: () => [] });
    const target = join(outDir, '_comfortable', 'files', this.#options.repository);
    const copied: string[] = [];
    const failed = new Map<string, string>();
    const limit = pLimit(8);
    await Promise.all(
      this.#linked(cache).map((relative) =>
        limit(async () => {
          const located = await locateFile(relative, bounds);
          const to = resolve(target, relative);
          if ('problem' in located || !to.startsWith(target + sep))
            return void failed.set(relative, 'problem' in located ? located.problem : 'outside the folder');
          await mkdir(dirname(to), { recursive: true });
          // A clone where the file system can (no bytes copied), a copy elsewhere.
          await copyFile(located.real, to, constants.COPYFILE_FICLONE).then(
            () => copied.push(relative),
            (error: Error) => failed.set(relative, error.message),
          );
        }),
      ),
    );
    return { copied: copied.sort(), failed };
  }

  /** Dev: serves the site's paths of the copy's files from the in-process server (GET and HEAD). */
  middleware(): (request: IncomingMessage, response: ServerResponse, next: () => void) => void {
    return (request, response, next) => {
      // Astro's dev server takes its base off the URL before the integration's middleware sees it.
      const path = (request.url ?? '').split('?')[0]!;
      const under = [this.site, this.#unbased].find((prefix) => path.startsWith(prefix));
      if (under === undefined || (request.method !== 'GET' && request.method !== 'HEAD')) return next();
      const headers = Object.fromEntries(
        ['if-none-match', 'range'].flatMap((name) => (request.headers[name] ? [[name, request.headers[name]]] : [])),
      );
      const upstream = httpRequest(
        `${this.served}${path.slice(under.length)}`,
        { method: request.method, headers },
        (answer) => {
          response.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(response);
        },
      );
      upstream.on('error', () => {
        if (!response.headersSent) response.writeHead(502);
        response.end();
      });
      upstream.end();
    };
  }
}

/**
 * After a build from a copy: copies the files its links point at into the output folder, and
 * says how many, and which could not be (their links lead nowhere).
 */
export async function copyIntoBuild(
  files: CopyFiles,
  outDir: string,
  cacheDir: string,
  logger: { info(message: string): void; warn(message: string): void },
): Promise<void> {
  const cache = openCache(cacheDir);
  if (!cache) return; // nothing synced: nothing links to a file
  const { copied, failed } = await files.copyInto(outDir, cache);
  if (copied.length > 0)
    logger.info(
      `Copied ${copied.length} ${copied.length === 1 ? 'file' : 'files'} of the snapshot to ${files.site} ` +
        `(their links point there)`,
    );
  if (failed.size > 0) {
    const listed = [...failed].map(([path, why]) => `${path} (${why})`).join(', ');
    logger.warn(
      `${failed.size} files the site links to could not be copied from the snapshot's folder, so their ` +
        `links lead nowhere: ${listed}. Pull the copy again with --assets.`,
    );
  }
}
