import { type DefaultTreeAdapterTypes, parseFragment } from 'parse5';

/**
 * Richtext HTML read as a browser reads it (parse5, the WHATWG parsing algorithm): attributes
 * quoted or not, character references decoded, elements closed where a browser closes them,
 * nothing read inside comments. The one way this package reads richtext: the renderer of
 * `render(entry)` (rendered.ts) and `<RichText>` (richtext.ts).
 */

export type HtmlNode = DefaultTreeAdapterTypes.ChildNode;
type HtmlElement = DefaultTreeAdapterTypes.Element;

/** The top-level nodes of an HTML fragment, each element with where its tags are in `html`. */
export function parseHtml(html: string): HtmlNode[] {
  return parseFragment(html, { sourceCodeLocationInfo: true }).childNodes;
}

export const isElement = (node: HtmlNode): node is HtmlElement => 'tagName' in node;

/** The children of a node; those of a `<template>` are its content. */
export const childrenOf = (node: HtmlNode): HtmlNode[] =>
  'content' in node ? node.content.childNodes : 'childNodes' in node ? node.childNodes : [];

/** Every element of the nodes and their descendants, in document order. */
export function* elementsOf(nodes: HtmlNode[]): Generator<HtmlElement> {
  for (const node of nodes) {
    if (!isElement(node)) continue;
    yield node;
    yield* elementsOf(childrenOf(node));
  }
}

/** An element's text: that of its descendants' text nodes, decoded, spaces kept (as `textContent`). */
export const textOf = (element: HtmlElement): string =>
  childrenOf(element)
    .map((node) => (isElement(node) ? textOf(node) : node.nodeName === '#text' ? node.value : ''))
    .join('');

/** An element's attributes, in order, by name (lower case), values decoded. */
export const attributesOf = (element: HtmlElement): Map<string, string> =>
  new Map(element.attrs.map((attribute) => [attribute.name, attribute.value]));

/**
 * A `width` or `height` attribute's pixels (`"640"` → 640); undefined for none, or a value that is
 * no positive number (`"50%"`).
 */
export function pixels(value: string | undefined): number | undefined {
  const number = Number(value);
  return number > 0 && Number.isFinite(number) ? number : undefined;
}

/** The level of a heading (`h2` → 2), undefined for another element. */
export const headingDepth = (name: string): number | undefined => (/^h[1-6]$/.test(name) ? Number(name[1]) : undefined);
