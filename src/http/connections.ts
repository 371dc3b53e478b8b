// Caps on open connections, in total and per remote address, checked as each TCP connection is
// accepted, before Node's HTTP machinery sees it. A connection over a cap gets a 503 envelope
// (`too_many_connections`, Retry-After, Connection: close) written on the socket, and is closed
// without a single request being parsed. The address is the socket's own: a TCP cap cannot see
// X-Forwarded-For. Trusted proxies (http.trustProxy) carry every client behind them, so the
// per-address cap does not apply to them; the total cap does. IPv6 clients are counted per /64
// (one site's allocation: one host can use any address in it).
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import ipaddr from 'ipaddr.js';
import { ApiError } from './errors.ts';
import type { HttpMetrics } from './metrics.ts';
import { answerAndClose } from './raw-reply.ts';

export interface ConnectionCaps {
  maxConnections: number;
  maxConnectionsPerAddress: number;
  /** http.trustProxy: addresses, CIDRs, or `loopback`, `linklocal`, `uniquelocal`. */
  trustProxy: string[];
}

export interface ConnectionCapDeps {
  newRequestId(): string;
  metrics: Pick<HttpMetrics, 'connections' | 'connectionsRefused'>;
}

/**
 * Puts the caps in front of the server's connection handling: the HTTP server's own 'connection'
 * listener (which attaches the parser) is called only for admitted sockets.
 */
export function capConnections(server: Server, caps: ConnectionCaps, deps: ConnectionCapDeps): void {
  const listeners = server.listeners('connection');
  if (listeners.length !== 1) throw new Error(`capConnections: expected the HTTP server's one connection listener, found ${listeners.length}`);
  const handleHttp = listeners[0] as (socket: Socket) => void;
  server.removeListener('connection', handleHttp);

  const trusted = trustMatcher(caps.trustProxy);
  const perAddress = new Map<string, number>();
  let open = 0;

  server.on('connection', (socket: Socket) => {
    const remote = socket.remoteAddress;
    if (!remote || !ipaddr.isValid(remote)) {
      socket.destroy(); // closed before we saw it
      return;
    }
    const addr = ipaddr.process(remote);
    const key = addressKey(addr);
    const capped = !trusted(addr);
    const mine = perAddress.get(key) ?? 0;
    const over = open >= caps.maxConnections ? 'total' : capped && mine >= caps.maxConnectionsPerAddress ? 'per_address' : null;
    if (over) {
      deps.metrics.connectionsRefused.inc({ reason: over });
      const refusal = new ApiError(
        'too_many_connections',
        over === 'total'
          ? 'The gateway has too many open connections; retry shortly.'
          : 'Too many open connections from your address; close some or retry shortly.',
        {
          headers: { 'retry-after': '1' },
        },
      );
      answerAndClose(socket, refusal, deps.newRequestId(), false);
      return;
    }
    open++;
    perAddress.set(key, mine + 1);
    deps.metrics.connections.inc();
    socket.once('close', () => {
      open--;
      const n = (perAddress.get(key) ?? 1) - 1;
      if (n === 0) perAddress.delete(key);
      else perAddress.set(key, n);
      deps.metrics.connections.dec();
    });
    handleHttp.call(server, socket);
  });
}

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/** The address a connection is counted under: IPv4 (IPv4-mapped IPv6 unwrapped by ipaddr.process), or an IPv6 /64. */
function addressKey(addr: Address): string {
  if (addr.kind() === 'ipv4') return addr.toString();
  const parts = (addr as ipaddr.IPv6).parts.slice(0, 4).map((p) => p.toString(16));
  return `${parts.join(':')}::/64`;
}

const NAMED_RANGES: Record<string, string[]> = {
  loopback: ['127.0.0.0/8', '::1/128'],
  linklocal: ['169.254.0.0/16', 'fe80::/10'],
  uniquelocal: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
};

/** Whether an address belongs to a trusted proxy. */
function trustMatcher(entries: string[]): (addr: Address) => boolean {
  const ranges: [Address, number][] = [];
  for (const entry of entries.flatMap((e) => NAMED_RANGES[e] ?? [e])) {
    try {
      if (entry.includes('/')) {
        ranges.push(ipaddr.parseCIDR(entry));
      } else {
        const one = ipaddr.process(entry);
        ranges.push([one, one.kind() === 'ipv4' ? 32 : 128]);
      }
    } catch {
      // Not an address or range; it cannot match a socket's address.
    }
  }
  return (addr) => ranges.some(([range, bits]) => addr.kind() === range.kind() && addr.match(range, bits));
}
