/**
 * The `like` operator (spec §4): `%` matches any run of characters, everything else literally,
 * case-insensitively, over the whole value. A regular expression (`^a[\s\S]*b$`) backtracks:
 * a pattern of many `%` held the server for seconds. Here a pattern is split at `%` into
 * literal parts: the first must start the value, the last must end it, and the others are found
 * in order, each at its leftmost place after the one before (which leaves the most room to the
 * rest, so this finds a match whenever there is one). Every character of the value is passed
 * over once by each step; runs of `%` leave nothing to do. V8's `indexOf` (Boyer–Moore–Horspool,
 * falling back to Boyer–Moore) finds a first occurrence in time linear in the text, whatever
 * the part: a test costs time linear in the value, and compiling one, in the pattern.
 */

/**
 * Folds case as a case-insensitive regular expression does (`u` flag), code point by code point:
 * `Σ`, `σ` and `ς` fold alike, `ß` stays itself. ASCII text, the common case, takes one call.
 */
export function foldCase(text: string): string {
  let ascii = true;
  for (let i = 0; i < text.length; i++) {
    if (text.charCodeAt(i) > 0x7f) {
      ascii = false;
      break;
    }
  }
  if (ascii) return text.toLowerCase();
  let folded = '';
  for (const char of text) folded += foldChar(char);
  return folded;
}

const single = (text: string): boolean => text.length === 1 || (text.length === 2 && text.codePointAt(0)! > 0xffff);

function foldChar(char: string): string {
  // Upper then lower case joins the letters with several lower forms (σ and ς, s and ſ); a
  // character whose case mapping is several characters (ß → SS, İ → i̇) keeps its own form.
  const upper = char.toUpperCase();
  if (single(upper)) {
    const lower = upper.toLowerCase();
    if (single(lower)) return lower;
  }
  const lower = char.toLowerCase();
  return single(lower) ? lower : char;
}

/** Compiles a `like` pattern into a test of a value folded with `foldCase`. */
export function compileLike(pattern: string): (folded: string) => boolean {
  const parts = foldCase(pattern).split('%');
  if (parts.length === 1) {
    const whole = parts[0]!;
    return (value) => value === whole;
  }
  const first = parts[0]!;
  const last = parts[parts.length - 1]!;
  const middle: string[] = [];
  let needed = first.length + last.length;
  for (let i = 1; i < parts.length - 1; i++) {
    if (parts[i] === '') continue;
    middle.push(parts[i]!);
    needed += parts[i]!.length;
  }
  return (value) => {
    if (value.length < needed || !value.startsWith(first) || !value.endsWith(last)) return false;
    let at = first.length;
    const end = value.length - last.length;
    for (const part of middle) {
      const found = value.indexOf(part, at);
      if (found === -1 || found + part.length > end) return false;
      at = found + part.length;
    }
    return true;
  };
}
