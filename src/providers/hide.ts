// The spec hides the upstreams: an upstream's own explanation of a rejected request (already
// scrubbed of URLs, addresses and keys by `scrub`) reaches the client only after the names that
// would give the route away are replaced: the upstream's model id becomes the virtual model name,
// and the provider's name, the upstream's host and its domain name become "upstream".
import { routeHost } from './http.ts';
import type { ResolvedRoute } from './types.ts';

/** The virtual model a route serves (route ids are `${model}#${index}`). */
export function virtualModel(route: ResolvedRoute): string {
  const at = route.id.lastIndexOf('#');
  return at < 0 ? route.id : route.id.slice(0, at);
}

export function hideUpstream(text: string, route: ResolvedRoute): string {
  const model = virtualModel(route);
  // Longest first, so `gpt-4o-mini` goes before `gpt-4o`, a host before its domain name.
  const names: [string, string][] = [];
  const slash = route.upstreamModel.lastIndexOf('/');
  names.push([route.upstreamModel, model]);
  if (slash >= 0) names.push([route.upstreamModel.slice(slash + 1), model]); // `Llama-3.1-8B` of `meta-llama/Llama-3.1-8B`
  names.push([route.provider, 'upstream']);
  const host = routeHost(route);
  if (host) {
    names.push([host, 'upstream']);
    const brand = domainName(host);
    if (brand) names.push([brand, 'upstream']);
  }
  let out = text;
  for (const [name, replacement] of names.filter(([n]) => n.length >= 2).sort((a, b) => b[0].length - a[0].length)) {
    out = out.replace(new RegExp(`(?<![A-Za-z0-9])${escapeRegExp(name)}(?![A-Za-z0-9])`, 'gi'), replacement);
  }
  return out;
}

/** `groq` of `api.groq.com`; none for addresses, single labels (localhost) and short names. */
function domainName(host: string): string | null {
  if (/^[\d.]+$/.test(host) || host.includes(':') || host.startsWith('[')) return null;
  const labels = host.split('.');
  const name = labels.length >= 2 ? labels[labels.length - 2]! : null;
  return name && name.length >= 3 ? name : null;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}
