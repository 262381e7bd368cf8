// The size of the code in TypeScript tokens (comments and white space do not count): the
// TypeScript scanner alone, skipping trivia, over every `.ts` file under a folder (default src/),
// `.d.ts` aside. A scanner without its parser reads a template literal's text after `${…}` and
// a regular expression as it reads code: the count is the one issue #41 set its targets in
// (66,049 for src/ at 0cdfb4e), so that figures stay comparable.
//   node scripts/tokens.js [folder]        one line per folder below it, and the total
//   node scripts/tokens.js src --files     one line per file
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import ts from 'typescript';

const root = process.argv[2] ?? 'src';
const perFile = process.argv.includes('--files');

/** Every `.ts` file under `dir` but declaration files. */
function sources(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** The tokens the scanner reads in a file, trivia (comments, white space, line breaks) skipped. */
function tokens(path) {
  const text = readFileSync(path, 'utf8');
  const scanner = ts.createScanner(ts.ScriptTarget.Latest, true, ts.LanguageVariant.Standard, text);
  let count = 0;
  while (scanner.scan() !== ts.SyntaxKind.EndOfFileToken) count++;
  return count;
}

const counts = new Map();
let total = 0;
for (const file of sources(root).sort()) {
  const n = tokens(file);
  total += n;
  const name = relative(root, file);
  const key = perFile ? name : name.split(sep).slice(0, -1).join('/') || '.';
  counts.set(key, (counts.get(key) ?? 0) + n);
}
for (const [key, n] of counts) console.log(`${String(n).padStart(7)}  ${key}`);
console.log(`${String(total).padStart(7)}  ${root} (total)`);
