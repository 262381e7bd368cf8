// The size of the code in TypeScript tokens (comments and white space do not count), over every
// `.ts` file under a folder (default src/), `.d.ts` aside: the tokens of TypeScript's parse, so
// that a template literal's text and a regular expression are one token each, as written.
//   node scripts/tokens.js [folder]            one line per folder below it, and the total
//   node scripts/tokens.js src --files         one line per file
//   node scripts/tokens.js src --scanner       the scanner alone, as issue #41 first counted (66,049
//                                              for src/ at 0cdfb4e): it reads the text of a template
//                                              after `${…}` and a regular expression as code, so a
//                                              change of one template can move a file's count by
//                                              hundreds either way.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import ts from 'typescript';

const args = process.argv.slice(2);
const root = args.find((arg) => !arg.startsWith('--')) ?? 'src';
const perFile = args.includes('--files');
const scannerAlone = args.includes('--scanner');

/** Every `.ts` file under `dir` but declaration files. */
function sources(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** The tokens of a file: the leaves of its parse (trivia is not a node), or what the scanner alone reads. */
function tokens(path) {
  const text = readFileSync(path, 'utf8');
  let count = 0;
  if (scannerAlone) {
    const scanner = ts.createScanner(ts.ScriptTarget.Latest, true, ts.LanguageVariant.Standard, text);
    while (scanner.scan() !== ts.SyntaxKind.EndOfFileToken) count++;
    return count;
  }
  const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  const visit = (node) => {
    const children = node.getChildren(file);
    if (children.length > 0) children.forEach(visit);
    else if (node.kind !== ts.SyntaxKind.EndOfFileToken) count++;
  };
  visit(file);
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
