import { expect } from 'vitest';
import type { AstroDev } from './astro.ts';
import { kitchen, kitchenId } from './kitchen.ts';

/**
 * What a test of `astro dev` on the kitchen site reads and edits: its pages (without the source
 * locations astro dev adds to every element), a page once it shows something, and the smoky
 * pozole's title edited as an editor would edit it, with the pages that reference it.
 */

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export function devPages(dev: AstroDev) {
  const page = async (path: string) => {
    const response = await fetch(`${dev.url}${path}`);
    return { status: response.status, html: (await response.text()).replace(/ data-astro-source-[a-z]+="[^"]*"/g, '') };
  };
  /** The page at `path` once it holds `text`, asked every 200 ms for at most `ms`; else as it was last. */
  const pageWith = async (path: string, text: string, ms: number): Promise<string> => {
    const deadline = Date.now() + ms;
    let html = (await page(path)).html;
    while (!html.includes(text) && Date.now() < deadline) {
      await wait(200);
      html = (await page(path)).html;
    }
    return html;
  };
  /** The recipe shows its chef; the chef's page and the home page list the recipe under `title`. */
  const expectReferencesIntact = async (title: string): Promise<void> => {
    expect((await page('/en/recipes/smoky-pozole/')).html).toContain('By <a href="/en/chefs/ana-ruiz/">Ana Ruiz</a>');
    expect((await page('/en/chefs/ana-ruiz/')).html).toContain(`<a href="/en/recipes/smoky-pozole/">${title}</a>`);
    expect((await page('/en/home/')).html).toContain(`<a href="/en/recipes/smoky-pozole/">${title}</a>`);
  };
  return { page, pageWith, expectReferencesIntact };
}

/** The kitchen repository through an editor's edits of the smoky pozole's English title. */
export function pozoleEditor() {
  let snapshot = kitchen();
  let edits = 0;
  /** The next edit: the snapshot with a new title (its updatedAt and revision moved), and the title. */
  return () => {
    edits++;
    snapshot = structuredClone(snapshot);
    const doc = snapshot.documents.find((d) => d.meta.id === kitchenId(301))!;
    const title = `Smoky pozole, take ${edits}`;
    (doc.fields as { title: Record<string, string> }).title.en_GB = title;
    doc.meta.updatedAt = new Date(Date.UTC(2030, 0, 1, 0, 0, edits)).toISOString();
    doc.meta.revision += 1;
    return { snapshot, title };
  };
}
