/**
 * A locale key of the form the Read API gives them (spec §1: `xx_XX`, or a plain language code
 * `xx`; a region may be longer, `es_419`, `zh_Hant`): the language in lower case. A snapshot's
 * declared keys are checked without regard to case (`snapshot-format.ts`); keys guessed from
 * values, where a server lists none, take this form as it is, so that a JSON object keyed
 * `USD` and `EUR` is no map of locales.
 */
export const localeKeyPattern = /^[a-z]{2,3}(_[A-Za-z0-9]{2,4})?$/;

/** The first locale of `chain` with a value in `byLocale` (a localized value under `locale=all`), if any. */
export const localeWithValue = (byLocale: Record<string, unknown>, chain: readonly string[]): string | undefined =>
  chain.find((key) => byLocale[key] !== undefined && byLocale[key] !== null);

type RepositoryLocales = { defaultLocale: string; locales: readonly { key: string; fallback?: string | undefined }[] };

/**
 * Locale key → the keys to try in order: the locale, its fallback, …, ending at the default
 * locale, which is on every chain (a locale with no fallback falls back to it). The server
 * answers a locale by this chain and the loader makes an entry by it, so a value a page shows is
 * one a filter in that locale sees.
 */
export function fallbackChains(repository: RepositoryLocales): Map<string, string[]> {
  let chains = chainsOf.get(repository);
  if (chains) return chains;
  chains = new Map();
  const byKey = new Map(repository.locales.map((l) => [l.key, l]));
  for (const { key } of repository.locales) {
    const chain = [key];
    for (let next = byKey.get(key)?.fallback; next && !chain.includes(next); next = byKey.get(next)?.fallback)
      chain.push(next);
    if (!chain.includes(repository.defaultLocale)) chain.push(repository.defaultLocale);
    chains.set(key, chain);
  }
  chainsOf.set(repository, chains);
  return chains;
}

// Every entry asks for its chain; the locales an object lists do not change.
const chainsOf = new WeakMap<RepositoryLocales, Map<string, string[]>>();
