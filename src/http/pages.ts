// The query and answer of a paginated list (src/shared/pages.ts): `limit` 1..100 (default 20),
// `after` the previous page's `next_after`; `{data, has_more, next_after}`.
import { Type, type TSchema } from 'typebox';
import { DEFAULT_PAGE_LIMIT } from '../shared/pages.ts';

export const Limit = Type.Optional(Type.String({ pattern: '^(100|[1-9][0-9]?)$', description: `1 to 100, default ${DEFAULT_PAGE_LIMIT}` }));
/** `after` for lists keyed by integer ids. */
export const AfterId = Type.Optional(Type.String({ pattern: '^[0-9]{1,15}$', description: "The previous page's next_after" }));
/** `after` for lists keyed by time-sorted string ids. */
export const AfterString = Type.Optional(Type.String({ pattern: '^[0-9A-Za-z_-]{1,60}$', description: "The previous page's next_after" }));

export const PageOf = <T extends TSchema>(item: T) =>
  Type.Object({ data: Type.Array(item), has_more: Type.Boolean(), next_after: Type.Union([Type.String(), Type.Null()]) });

export const limitOf = (q: { limit?: string | undefined }): number => (q.limit === undefined ? DEFAULT_PAGE_LIMIT : Number(q.limit));
