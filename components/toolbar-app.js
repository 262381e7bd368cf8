import { defineToolbarApp } from 'astro/toolbar';

/**
 * The dev toolbar app "Comfortable" (src/astro/toolbar.ts answers it): the documents the page in
 * view shows, in which locale, with revision, last update and the fields that fell back, and a
 * button that syncs with the CMS now. Every value is set as text, never as HTML.
 */
export default defineToolbarApp({
  init(canvas, app, server) {
    const panel = document.createElement('astro-dev-toolbar-window');
    panel.setAttribute('data-comfortable', '');
    const style = document.createElement('style');
    style.textContent = `
      [data-comfortable] { max-height: 70vh; overflow: auto; }
      header { display: flex; gap: 1em; align-items: center; justify-content: space-between; }
      h1 { font-size: 1.1em; margin: 0; }
      p { margin: 0.5em 0; color: #bfc1c9; }
      table { border-collapse: collapse; width: 100%; font-size: 0.85em; }
      th, td { text-align: left; padding: 0.25em 0.5em; border-bottom: 1px solid #343841; vertical-align: top; }
      .fallback { color: #f2b75c; }
      .error { color: #f86f6f; }`;
    canvas.append(style, panel);

    const element = (tag, text, attributes = {}) => {
      const made = document.createElement(tag);
      if (text !== undefined) made.textContent = String(text);
      for (const [name, value] of Object.entries(attributes)) made.setAttribute(name, value);
      return made;
    };
    const page = () => ({
      path: location.pathname,
      lang: document.documentElement.lang,
      text: document.body.textContent.slice(0, 500_000),
    });
    const button = element('astro-dev-toolbar-button', 'Sync now', { 'data-sync': '', 'button-style': 'purple' });
    // A sync reloads the page (its content may have changed): the app opens again after it.
    const reopen = 'comfortable:reopen';
    button.addEventListener('click', () => {
      button.textContent = 'Syncing…';
      sessionStorage.setItem(reopen, location.pathname);
      server.send('comfortable:sync', page());
    });

    const show = (report) => {
      button.textContent = 'Sync now';
      const header = element('header');
      header.append(element('h1', 'Comfortable'), button);
      const status = element(
        'p',
        report.syncedAt ? `Last sync ${new Date(report.syncedAt).toLocaleTimeString()}` : 'Not synced yet',
      );
      const rows = (report.documents ?? []).map((shown) => {
        const fellBack = Object.entries(shown.fallbacks).map(([field, from]) => `${field} ← ${from ?? 'none'}`);
        const row = element('tr', undefined, { 'data-document': shown.id });
        row.append(
          element('td', shown.title),
          element('td', `${shown.collection} · ${shown.contentType} · ${shown.id}`),
          element('td', shown.astroLocale ? `${shown.locale} (${shown.astroLocale})` : shown.locale),
          element('td', `rev ${shown.revision}, ${new Date(shown.updatedAt).toLocaleString()}`),
          element('td', fellBack.join(', ') || '—', fellBack.length ? { class: 'fallback' } : {}),
        );
        return row;
      });
      const table = element('table');
      const head = element('tr');
      for (const name of ['Document', 'Collection · type · id', 'Locale', 'Revision', 'Fell back'])
        head.append(element('th', name));
      table.append(head, ...rows);
      const summary = element(
        'p',
        rows.length === 0
          ? 'No document of the loaded collections found on this page (by a slug in its path or a title in its text).'
          : `${rows.length + (report.more ?? 0)} documents on this page, in ${report.locale}` +
              (report.more ? ` (the first ${rows.length} listed)` : ''),
        { 'data-summary': '' },
      );
      panel.replaceChildren(
        header,
        status,
        ...(report.error ? [element('p', report.error, { class: 'error' })] : []),
        summary,
        table,
      );
    };

    server.on('comfortable:report', (report) => {
      if (report.path === location.pathname) show(report);
    });
    app.onToggled(({ state }) => {
      if (state) server.send('comfortable:page', page());
    });
    if (sessionStorage.getItem(reopen) === location.pathname) {
      sessionStorage.removeItem(reopen);
      // Once init has returned: the toolbar opens only an app that is ready.
      setTimeout(() => app.toggleState({ state: true }), 0);
    }
  },
});
