export const usage = `Usage:
  comfortable-loader serve <snapshot file or folder>... [--port N] [--host H] [--quiet]
                           [--webhook <url>]   (the secret in CMFT_WEBHOOK_SECRET)
  comfortable-loader sync [--config <file>] [--mode incremental|fresh|offline] [--verify] [--json]
  comfortable-loader types [--config <file>] [--out <dir>] [--zod <module>] [--force]
  comfortable-loader pull [--config <file>] [--out <dir>] [--assets] [--json]

Commands:
  serve   Serve repository snapshots as the Content Delivery Read API.
  sync    Fetch content into the local cache; only what changed since the last sync.
          --verify also checks every cached record against its digest (a sync reads only
          what changed) and fetches the damaged ones again; exit 1 when one cannot be.
  types   Write a zod schema file per content type (default into src/content/schemas) from the
          cache, to commit and edit; existing files are kept unless --force.
  pull    Copy the repository into <out>/<repository>.json (default out: content), a snapshot
          that serve and the integration's snapshot option serve with a local key.
          --assets also downloads the assets' files beside it.

Exit codes: 0 done, 1 failed, 2 bad usage or config. See docs/sync.md, docs/server.md and docs/pull.md.`;

/** Prints a usage problem and returns exit code 2. */
export function usageError(message: string): number {
  console.error(`Error: ${message}\n\n${usage}`);
  return 2;
}
