import { defineCollection } from 'astro:content';
import { comfortableLoader } from 'comfortable-loader/astro';

// Each collection is filled by one shared sync of the `demo` repository (configured in
// astro.config.mjs). Entries exist in every locale, with ids `<locale>/<document id>`; relations
// in `fields` are references to the collection holding their content type.
export const collections = {
  // The repository's `posts` collection, newest first, with authors, categories, related posts
  // and cover images included. Pages key themselves with `data.cacheKey`, which covers more
  // than the includes do: two relations away, and the documents that point back.
  posts: defineCollection({ loader: comfortableLoader({ collection: 'posts', options: { includes: 1 } }) }),
  // Every document of a content type.
  authors: defineCollection({ loader: comfortableLoader({ contentType: 'author' }) }),
  categories: defineCollection({ loader: comfortableLoader({ contentType: 'category' }) }),
  pages: defineCollection({ loader: comfortableLoader({ collection: 'pages' }) }),
  // Events group their fields into sections: `fields.details.headline`, `fields.programme.host`.
  events: defineCollection({ loader: comfortableLoader({ collection: 'events' }) }),
  // The document the alias `home` points to: one entry per locale.
  home: defineCollection({ loader: comfortableLoader({ alias: 'home' }) }),
};
