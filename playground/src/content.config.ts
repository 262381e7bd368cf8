import { defineCollection } from 'astro:content';
import { comfortableLoader } from 'comfortable-loader/astro';

export const collections = {
  posts: defineCollection({ loader: comfortableLoader({ collection: 'posts', options: { includes: 2 } }) }),
  authors: defineCollection({ loader: comfortableLoader({ contentType: 'author' }) }),
  categories: defineCollection({ loader: comfortableLoader({ contentType: 'category' }) }),
  pages: defineCollection({ loader: comfortableLoader({ aliases: ['home', 'about'] }) }),
};
