import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fixture, tinySnapshot } from './server.ts';

/**
 * The tiny snapshot with files of every kind beside it, for sites built from a copy: its images
 * as local files (its own are on hosts the tests cannot reach), a PDF that news 101 lists among
 * its assets (a file asset: no width or height), and richtext in news 100 that shows an image
 * of a known size (which Astro optimises) and one of none (which stays an `<img>`; author 201
 * shows it as its avatar).
 */

/** A PDF small enough to read in a test's failure message. */
export const pdf = Buffer.from('%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n');

/** The relative paths of the files beside the snapshot, as its assets name them. */
export const paths = {
  pdf: 'docs/printable-card.pdf',
  plain: 'images/plain.svg',
  apples: 'images/apples.svg',
  ada: 'images/ada.svg',
} as const;

const svg = () => readFileSync(fixture('images/apples.svg'));

const asset = (id: string, url: string, file: Record<string, unknown>, title: string) => ({
  fields: { title: { en_US: title }, file: { url, fileName: url.split('/').pop(), ...file } },
  meta: {
    id,
    contentType: '_asset',
    revision: 1,
    tags: [],
    createdAt: '2023-11-03T00:00:00.000Z',
    updatedAt: '2023-11-03T00:00:00.000Z',
  },
});

/** Writes the snapshot and its files into a new folder; returns the snapshot's path. */
export function tinyWithFileAssets(): string {
  const dir = mkdtempSync(join(tmpdir(), 'cmft-files-'));
  const snapshot = tinySnapshot();
  const write = (path: string, bytes: Buffer) => {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), bytes);
  };
  write(paths.apples, svg());
  write(paths.ada, svg());
  write(paths.plain, svg());
  write(paths.pdf, pdf);
  const ada = snapshot.assets.find((a: { meta: { id: string } }) => a.meta.id === '301');
  ada.fields.file = {
    ...ada.fields.file,
    url: paths.ada,
    fileName: 'ada.svg',
    mimeType: 'image/svg+xml',
    size: svg().length,
  };
  snapshot.assets.push(
    asset('302', paths.pdf, { mimeType: 'application/pdf', size: pdf.length }, 'Printable card'),
    asset('303', paths.plain, { mimeType: 'image/svg+xml', size: svg().length }, 'Plain'),
  );
  const news = (id: string) => snapshot.documents.find((d: { meta: { id: string } }) => d.meta.id === id);
  news('101').fields.images = [{ meta: { id: '302', contentType: '_asset' } }];
  // A pull copies the assets documents refer to: the image of no size is an author's too.
  news('201').fields.avatar = [{ meta: { id: '303', contentType: '_asset' } }];
  news('100').fields.text.en_US = {
    html: `<p>Crisp apples</p><p><img src="${paths.apples}" alt="Apples"><img src="${paths.plain}" alt="Plain"></p>`,
    plain: 'Crisp apples',
  };
  writeFileSync(join(dir, 'tiny.json'), JSON.stringify(snapshot, null, 2));
  return join(dir, 'tiny.json');
}
