// A streamed chat answer's prelude: the chunks before the first that says anything. The router
// (src/providers/router.ts) fails a stream over until its first real chunk, so role-only chunks are
// held back and merged into that chunk rather than committing to the route.
import type { ChatChunk } from './types.ts';

/** Role-only chunks held back before the first real one; more than this and we commit anyway. */
const MAX_PRELUDE_CHUNKS = 64;

/**
 * Pulls the stream's first chunk with something in it (text, a tool call, a finish). Role-only chunks are held back and their
 * roles merged into it, so the route is not committed to before it said anything.
 */
export async function pullFirst(it: AsyncIterator<ChatChunk>): Promise<ChatChunk | null> {
  let roles: ChatChunk | null = null;
  for (let i = 0; i < MAX_PRELUDE_CHUNKS; i++) {
    const next = await it.next();
    if (next.done) return roles;
    const chunk = next.value;
    const roleOnly =
      chunk.usage === undefined && chunk.choices.length > 0 && chunk.choices.every((c) => !c.finish_reason && !c.delta.content && !c.delta.tool_calls);
    if (!roleOnly) return roles ? mergeRoles(roles, chunk) : chunk;
    roles = roles ? { choices: [...roles.choices, ...chunk.choices.filter((c) => !roles!.choices.some((r) => r.index === c.index))] } : chunk;
  }
  return roles;
}

function mergeRoles(roles: ChatChunk, chunk: ChatChunk): ChatChunk {
  const present = new Set(chunk.choices.map((c) => c.index));
  const roleOf = new Map(roles.choices.map((c) => [c.index, c.delta.role]));
  const choices = [
    ...roles.choices.filter((c) => !present.has(c.index)),
    ...chunk.choices.map((c) => {
      const role = roleOf.get(c.index);
      return role && !c.delta.role ? { ...c, delta: { role, ...c.delta } } : c;
    }),
  ];
  return chunk.usage ? { choices, usage: chunk.usage } : { choices };
}
