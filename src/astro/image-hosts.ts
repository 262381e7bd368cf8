import type { AstroConfig, AstroIntegrationLogger } from 'astro';
import { openCache } from '../cache/index.ts';

/**
 * The hosts Astro may optimise images from (`image.remotePatterns`): the base URL's and those of
 * the synced assets, read from the cache. Astro sets its config before the content sync, so the
 * hosts come in as early as each command allows:
 *
 * - `astro build`: the base URL's host at config setup, the synced assets' hosts when the sync is
 *   done (`astro:build:start`), before any page is built. Astro reads `image.remotePatterns` when
 *   it builds the pages, so a first build on an empty cache gets every host, and the config Astro
 *   hashes for its content store stays the same whatever the assets' hosts.
 * - `astro dev` (and the other commands): the base URL's host and the hosts of the cached assets
 *   at config setup. A host first seen later (an empty cache, a refresh) gets one warning that
 *   says what to add: changing the config of a running dev server would make Astro throw its
 *   content store away at the next refresh.
 */

interface RemotePattern {
  protocol: string;
  hostname: string;
  port?: string;
}

/**
 * The remote image patterns of some origins: `http://127.0.0.1:4010` → `{ protocol: 'http', hostname: '127.0.0.1',
 * port: '4010' }`.
 */
export function remotePatterns(origins: Iterable<string>): RemotePattern[] {
  return [...new Set(origins)].map((origin) => {
    const url = new URL(origin);
    return { protocol: url.protocol.replace(':', ''), hostname: url.hostname, ...(url.port ? { port: url.port } : {}) };
  });
}

/** The origins of the asset files in the cache of `dir`; none when there is no cache (yet) or it cannot be read. */
function cachedAssetOrigins(dir: string): string[] {
  try {
    return openCache(dir)?.assetOrigins() ?? [];
  } catch {
    return []; // a damaged cache is the sync's to report
  }
}

const written = (pattern: RemotePattern) =>
  `{ protocol: '${pattern.protocol}', hostname: ` +
  `'${pattern.hostname}'${pattern.port ? `, port: '${pattern.port}'` : ''} }`;

export class ImageHosts {
  readonly #cacheDir: string;
  readonly #logger: AstroIntegrationLogger;
  #image: AstroConfig['image'] | undefined;
  /** Astro's own check, loaded with the config (so that importing this package needs no Astro). */
  #isRemoteAllowed: typeof import('astro/assets/utils').isRemoteAllowed | undefined;
  readonly #warned = new Set<string>();

  constructor(cacheDir: string, logger: AstroIntegrationLogger) {
    this.#cacheDir = cacheDir;
    this.#logger = logger;
  }

  /**
   * The patterns to add at config setup: the base URL's host, and in commands other than `build` the cached assets'
   * hosts.
   */
  atSetup(baseUrl: string, command: string): RemotePattern[] {
    const origins = [new URL(baseUrl).origin];
    if (command !== 'build') origins.push(...cachedAssetOrigins(this.#cacheDir));
    return remotePatterns(origins);
  }

  /** The resolved config's image settings, which a build adds hosts to. */
  async resolved(image: AstroConfig['image']): Promise<void> {
    this.#image = image;
    this.#isRemoteAllowed = (await import('astro/assets/utils')).isRemoteAllowed;
  }

  /** The origins of the cached assets that the image settings do not allow. */
  #notAllowed(): string[] {
    const image = this.#image;
    const allowed = this.#isRemoteAllowed;
    if (!image || !allowed) return [];
    return cachedAssetOrigins(this.#cacheDir).filter((origin) => !allowed(`${origin}/`, image));
  }

  /** A build, after the content sync: allows the hosts of the synced assets before the pages are built. */
  beforePages(): void {
    const added = this.#notAllowed();
    if (added.length === 0) return;
    this.#image!.remotePatterns.push(...remotePatterns(added));
    this.#logger.info(`Image hosts of the synced assets allowed in image.remotePatterns: ${added.join(', ')}`);
  }

  /** Dev, after a sync: one warning for each host of the synced assets that is not allowed. */
  afterSync(): void {
    for (const origin of this.#notAllowed()) {
      if (this.#warned.has(origin)) continue;
      this.#warned.add(origin);
      this.#logger.warn(
        `Images on ${origin} are not optimised: add ${written(remotePatterns([origin])[0]!)} to ` +
          `image.remotePatterns in astro.config, or restart the dev server (it allows the hosts of the ` +
          `cached assets when it starts)`,
      );
    }
  }
}
