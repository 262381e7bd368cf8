import { decodeHTMLAttribute } from 'entities';
import { ELEMENT_NODE, type Node, parse, TEXT_NODE } from 'ultrahtml';

/**
 * Richtext rendered with the site's own components (`comfortable-loader/RichText.astro`): the
 * HTML of an entry's rendered field (what `render(entry)` shows: headings with their ids,
 * images of the repository's assets marked for Astro's image pipeline) read into a tree by an
 * HTML parser, whose elements the component renders one by one, each through the site's
 * component for it when there is one, as plain HTML when there is none.
 */

/** The attributes of an element, decoded as a browser reads them. */
export type RichTextAttributes = Record<string, string>;

/** An image of the repository's assets: what Astro's `<Image>` takes. */
export interface RichTextImage {
  src: string;
  alt: string;
  width: number;
  height: number;
  [attribute: string]: string | number;
}

export type RichTextNode =
  | { type: 'text'; html: string }
  | { type: 'image'; image: RichTextImage }
  | {
      type: 'element';
      name: string;
      attributes: RichTextAttributes;
      /** Of a heading (`h1`–`h6`): its level. */
      depth?: number;
      void: boolean;
      children: RichTextNode[];
    };

/** A component the site gives for an element; Astro components are such functions. */
// biome-ignore lint/suspicious/noExplicitAny: Astro components return what Astro's renderer takes
type Component<P> = (props: P) => any;
type Heading = Component<RichTextAttributes & { id: string; depth: number }>;

/** The site's components by element name; an element without one is rendered as plain HTML. */
export interface RichTextComponents {
  /** A link, its `href` already turned into a page URL by the `links` rule when it gives one. */
  a?: Component<RichTextAttributes & { href: string }>;
  /** An image of the repository's assets (others are plain `img` elements). Default: Astro's `<Image>`. */
  img?: Component<RichTextImage>;
  h1?: Heading;
  h2?: Heading;
  h3?: Heading;
  h4?: Heading;
  h5?: Heading;
  h6?: Heading;
  [element: string]: Component<never> | undefined;
}

const voidElements = new Set(['area', 'br', 'col', 'embed', 'hr', 'img', 'input', 'source', 'track', 'wbr']);

/** The tree of a richtext field's rendered HTML. */
export function richTextNodes(html: string): RichTextNode[] {
  return convert(parse(html).children);
}

function convert(nodes: Node[]): RichTextNode[] {
  const out: RichTextNode[] = [];
  for (const node of nodes) {
    if (node.type === TEXT_NODE) out.push({ type: 'text', html: node.value });
    if (node.type !== ELEMENT_NODE) continue; // comments, doctypes
    const attributes: RichTextAttributes = {};
    for (const [name, value] of Object.entries(node.attributes as Record<string, string>))
      attributes[name.toLowerCase()] = decodeHTMLAttribute(value);
    const name = String(node.name).toLowerCase();
    const image = attributes.__astro_image_;
    if (name === 'img' && image) {
      out.push({ type: 'image', image: JSON.parse(image) as RichTextImage });
      continue;
    }
    const depth = /^h[1-6]$/.test(name) ? Number(name[1]) : undefined;
    out.push({
      type: 'element',
      name,
      attributes,
      ...(depth ? { depth } : {}),
      void: voidElements.has(name),
      children: convert(node.children ?? []),
    });
  }
  return out;
}
