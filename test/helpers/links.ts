import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { isIP } from 'node:net';
import { join, relative, sep } from 'node:path';
import { decodeHTMLAttribute } from 'entities';

/**
 * A link checker for a built site: every `href`, `src` and `srcset` of every HTML file in
 * `dist/` must be a file of `dist/` (as the site serves it under its `base`) or an http(s) URL
 * of a host that is not a loopback address (a server on this machine lives no longer than the
 * build that asked it). Other schemes (`mailto:`, `data:`, `tel:`) and fragments pass.
 */

export interface BrokenLink {
  /** The HTML file, relative to `dist/`. */
  page: string;
  attribute: string;
  url: string;
  why: string;
}

/** The HTML files under `dir`, relative to it, with `/` between folders. */
function htmlFiles(dir: string): string[] {
  const found: string[] = [];
  const walk = (at: string) => {
    for (const entry of readdirSync(at, { withFileTypes: true })) {
      const path = join(at, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (/\.html?$/i.test(entry.name)) found.push(relative(dir, path).split(sep).join('/'));
    }
  };
  walk(dir);
  return found.sort();
}

/** The URLs of a tag's `href`, `src` and `srcset` attributes (each candidate of a srcset). */
function linksOf(html: string): { attribute: string; url: string }[] {
  const links: { attribute: string; url: string }[] = [];
  const withoutComments = html.replace(/<!--[\s\S]*?-->/g, '');
  for (const [tag] of withoutComments.matchAll(/<[a-z][^\s/>]*(?:\s[^>]*)?>/gi)) {
    for (const [, name, double, single, bare] of tag.matchAll(
      /\s(href|src|srcset)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+))/gi,
    )) {
      const attribute = name!.toLowerCase();
      const value = decodeHTMLAttribute(double ?? single ?? bare ?? '');
      const urls =
        attribute === 'srcset'
          ? value
              .split(',')
              .map((candidate) => candidate.trim().split(/\s+/)[0]!)
              .filter(Boolean)
          : [value.trim()];
      for (const url of urls) links.push({ attribute, url });
    }
  }
  return links;
}

/** Whether a host is this machine: `localhost`, 127.0.0.0/8, `::1`, `0.0.0.0`, or an IPv4-mapped loopback. */
export function isLoopback(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (isIP(host) === 4) return host.startsWith('127.') || host === '0.0.0.0';
  if (isIP(host) === 6) return host === '::1' || host === '::' || /^::ffff:(127\.|7f)/.test(host);
  return false;
}

/** Why a URL of a page is broken, or undefined when it is not. */
function problem(url: string, page: string, dist: string, base: string): string | undefined {
  if (url === '' || url.startsWith('#')) return undefined;
  const site = 'https://site.invalid';
  // The page as the site serves it: dist/news/a/index.html is <base>news/a/index.html.
  const resolved = URL.parse(url, `${site}${base}${page}`);
  if (!resolved) return 'not a URL';
  if (resolved.origin !== site) {
    if (resolved.protocol !== 'http:' && resolved.protocol !== 'https:') return undefined;
    return isLoopback(resolved.hostname) ? 'a server on this machine' : undefined;
  }
  if (!resolved.pathname.startsWith(base)) return `outside the base ${base}`;
  let path: string;
  try {
    path = decodeURIComponent(resolved.pathname.slice(base.length));
  } catch {
    return 'malformed percent-encoding';
  }
  const file = join(dist, ...path.split('/'));
  if (!file.startsWith(dist)) return 'outside dist/';
  if (existsSync(file) && statSync(file).isFile()) return undefined;
  if (existsSync(join(file, 'index.html'))) return undefined;
  return 'no such file in dist/';
}

/**
 * The broken links of the site built in `dist` (served under `base`, `/` by default).
 *
 * @example expect(brokenLinks(join(site, 'dist'), { base: '/shop/' })).toEqual([])
 */
export function brokenLinks(dist: string, options: { base?: string } = {}): BrokenLink[] {
  const base = (options.base ?? '/').replace(/\/?$/, '/');
  const broken: BrokenLink[] = [];
  for (const page of htmlFiles(dist)) {
    for (const { attribute, url } of linksOf(readFileSync(join(dist, page), 'utf8'))) {
      const why = problem(url, page, dist, base);
      if (why) broken.push({ page, attribute, url, why });
    }
  }
  return broken;
}

/** How many links the pages of `dist` hold (so a test can tell that the checker saw some). */
export function linkCount(dist: string): number {
  return htmlFiles(dist).reduce((sum, page) => sum + linksOf(readFileSync(join(dist, page), 'utf8')).length, 0);
}
