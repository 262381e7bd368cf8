import { attributesOf, childrenOf, type HtmlNode, headingDepth, isElement, parseHtml, pixels } from './html.ts';
import { renderRichtext } from './rendered.ts';

/**
 * Richtext rendered with the site's own components (`comfortable-loader/RichText.astro`): the
 * HTML of an entry's rendered field (what `render(entry)` shows: headings with their ids,
 * images of the repository's assets marked for Astro's image pipeline) read into a tree, as a
 * browser reads it, whose elements the component renders one by one, each through the site's
 * component for it when there is one, as plain HTML when there is none.
 */

/** The attributes of an element, by name (lower case), decoded as a browser reads them. */
export type RichTextAttributes = Record<string, string>;

/**
 * An image of the richtext (an `img` with a `src`), as the site's `img` component gets it: the
 * element's attributes, `width` and `height` as numbers. `optimise` says whether Astro's `<Image>`
 * takes it: an image of the repository's assets whose file could be fetched when the entry was
 * made, with its size. Any other image is to be shown as it is (`<img>`): one of another host,
 * with the size its element gives if any, or an asset's file that could not be fetched (the CMS
 * down), with its asset's size.
 */
export type RichTextImage = {
  /** The URL of the image's file. */
  src: string;
  /** The element's other attributes (`class`, `title`, …). */
  [attribute: string]: string | number | boolean | undefined;
} & (
  | {
      optimise: true;
      /** The element's `alt`, empty when it has none. */
      alt: string;
      /** The size the element gives, else its asset's. */
      width: number;
      height: number;
    }
  | {
      optimise: false;
      alt?: string;
      /** The size the element gives (in pixels), else its asset's, when either is known. */
      width?: number;
      height?: number;
    }
);

/** A link of the richtext, as the `links` rule of `<RichText>` sees it. */
export interface RichTextLink {
  /** The link's `href`, as the field has it. */
  href: string;
  /**
   * The id of the document it links to, when `href` is a document's URL of the Read API
   * (`https://api.cmft.io/v1/<repository>/documents/<id>`, on any host).
   */
  document?: string;
  /**
   * The API id of the alias it links to, when `href` is an alias's URL of the Read API
   * (`…/v1/<repository>/alias/<apiId>`).
   */
  alias?: string;
}

/**
 * Turns a link into the URL to show (a link to a document into that document's page); undefined
 * keeps its `href`. It may be async (`getEntry`).
 */
export type RichTextLinks = (link: RichTextLink) => string | undefined | Promise<string | undefined>;

export type RichTextNode =
  | { type: 'text'; text: string }
  /** An image Astro's `<Image>` optimises. */
  | { type: 'image'; image: Extract<RichTextImage, { optimise: true }> }
  | {
      type: 'element';
      name: string;
      attributes: RichTextAttributes;
      /** Of a heading (`h1`–`h6`): its level. */
      depth?: number;
      /** Of an `img` with a `src`: what the site's `img` component gets (`optimise` is false). */
      image?: RichTextImage;
      void: boolean;
      children: RichTextNode[];
    };

/** A component the site gives for an element; Astro components are such functions. */
// biome-ignore lint/suspicious/noExplicitAny: Astro components return what Astro's renderer takes
type Component<P> = (props: P) => any;
/** A heading's props: its attributes, its `id` (the slug of `render(entry).headings`) and its level. */
type Heading = Component<RichTextAttributes & { id: string; depth: number }>;

/** The site's components by element name; an element without one is rendered as plain HTML. */
export interface RichTextComponents {
  /** A link, its `href` already through the `links` rule. */
  a?: Component<RichTextAttributes & { href: string }>;
  /**
   * Every image (an `img` with a `src`). Default: Astro's `<Image>` for those it optimises, the
   * element as it is for the others.
   */
  img?: Component<RichTextImage>;
  h1?: Heading;
  h2?: Heading;
  h3?: Heading;
  h4?: Heading;
  h5?: Heading;
  h6?: Heading;
  /** Any other element (`table`, `blockquote`, `code`, `p`, `li`, …): its attributes; its content is the slot. */
  [element: string]: Component<never> | undefined;
}

const voidElements = new Set(['area', 'br', 'col', 'embed', 'hr', 'img', 'input', 'source', 'track', 'wbr']);

/**
 * The tree `<RichText>` renders: of an entry's rendered field (`entry.rendered.html`), or of
 * a richtext field's HTML (`{ html }`), whose headings then get the ids `render()` would give
 * (or a Markdown field a loader rendered, `data.markdown.intro`, whose asset images it marked).
 * With a `links` rule, each link's `href` is the URL it gives.
 *
 * @example await richTextNodes(post.rendered?.html ?? '', (link) => link.document && `/posts/${link.document}/`)
 */
export async function richTextNodes(html: string | { html: string }, links?: RichTextLinks): Promise<RichTextNode[]> {
  const source = typeof html === 'string' ? html : renderRichtext(html.html, new Map(), () => false).html;
  const anchors: RichTextAttributes[] = [];
  const nodes = convert(parseHtml(source), anchors);
  if (links) {
    await Promise.all(
      anchors.map(async (attributes) => {
        const href = await links(linkTarget(attributes.href!));
        if (href !== undefined) attributes.href = href;
      }),
    );
  }
  return nodes;
}

/** The tree of the nodes; the attributes of each link (an `a` with an `href`) go into `anchors`, in order. */
function convert(nodes: HtmlNode[], anchors: RichTextAttributes[]): RichTextNode[] {
  const out: RichTextNode[] = [];
  for (const node of nodes) {
    if (node.nodeName === '#text' && 'value' in node) out.push({ type: 'text', text: node.value });
    if (!isElement(node)) continue; // comments
    const attributes = Object.fromEntries(attributesOf(node));
    const optimised = node.tagName === 'img' ? attributes.__astro_image_ : undefined;
    if (optimised) {
      const image = JSON.parse(optimised) as { src: string; alt: string; width: number; height: number };
      out.push({ type: 'image', image: { ...image, optimise: true } });
      continue;
    }
    // An element the parser implies (a table's tbody) stays implied: the HTML is the editor's.
    if (!node.sourceCodeLocation?.startTag) {
      out.push(...convert(childrenOf(node), anchors));
      continue;
    }
    if (node.tagName === 'a' && attributes.href !== undefined) anchors.push(attributes);
    const depth = headingDepth(node.tagName);
    const image =
      node.tagName === 'img' && attributes.src !== undefined ? shown(attributes, attributes.src) : undefined;
    out.push({
      type: 'element',
      name: node.tagName,
      attributes,
      ...(depth ? { depth } : {}),
      ...(image ? { image } : {}),
      void: voidElements.has(node.tagName),
      children: convert(childrenOf(node), anchors),
    });
  }
  return out;
}

/** An image Astro does not optimise, as the `img` component gets it: its size in numbers, where it gives one. */
function shown(attributes: RichTextAttributes, src: string): RichTextImage {
  const { width, height, ...rest } = attributes;
  const size = { width: pixels(width), height: pixels(height) };
  return {
    ...rest,
    src,
    ...(size.width ? { width: size.width } : {}),
    ...(size.height ? { height: size.height } : {}),
    optimise: false,
  };
}

/** The document or alias a Read API URL names: `…/v1/<repository>/documents/<id>` or `…/alias/<apiId>`. */
export function linkTarget(href: string): RichTextLink {
  const [, kind, id] = /(?:^|\/)v1\/[^/?#]+\/(documents|alias)\/([^/?#]+)\/?(?:[?#].*)?$/.exec(href) ?? [];
  if (!id) return { href };
  return kind === 'documents' ? { href, document: id } : { href, alias: id };
}
