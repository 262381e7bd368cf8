import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * The README as a new user reads it: its code blocks that name a file (```astro
 * title="src/pages/x.astro"), each with the section it stands in, so a test can write them into a
 * fresh site as the user pastes them.
 */

export interface ReadmeFile {
  /** The path the block names, relative to the site. */
  path: string;
  text: string;
  /** The `## ` heading the block stands under. */
  section: string;
}

export const readmePath = fileURLToPath(new URL('../../README.md', import.meta.url));

/** The blocks of `markdown` (the README by default) that name a file, in order. */
export function readmeFiles(markdown = readFileSync(readmePath, 'utf8')): ReadmeFile[] {
  const files: ReadmeFile[] = [];
  let section = '';
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.startsWith('## ')) section = line.slice(3).trim();
    const fence = /^```\w*(?:\s+title="([^"]+)")?\s*$/.exec(line);
    if (!fence) continue;
    const end = lines.findIndex((other, j) => j > i && other.startsWith('```'));
    if (fence[1]) files.push({ path: fence[1], text: `${lines.slice(i + 1, end).join('\n')}\n`, section });
    i = end;
  }
  return files;
}

/** Relative links of a Markdown file (to files, anchors aside). */
export function relativeLinks(markdown: string): string[] {
  const links = [...markdown.matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1]!);
  return links
    .filter((link) => !/^[a-z][a-z0-9+.-]*:/i.test(link) && !link.startsWith('#'))
    .map((link) => link.split('#')[0]!);
}
