// Receiving URLs are user input: the SSRF rules. A URL is refused unless its scheme is https (http
// only when allowed) and its host is a public unicast address, whether written as an IP literal or
// reached through DNS.
//
// - Literals and local names: the classification is src/shared/address.ts's (addressRange).
// - Names: `safeLookup` is the connection's DNS lookup: it resolves, refuses the name when any of
//   its addresses is refused, and hands the socket exactly the addresses it checked, so the
//   connection goes where the check looked (no second resolution, no DNS rebinding).
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { addressRange, isLocalName, isPublicAddress } from '../shared/address.ts';

export interface AddressPolicy {
  /** Lifts the address rule (development and tests): WEBHOOKS_ALLOW_PRIVATE_NETWORKS=true. */
  allowPrivateNetworks: boolean;
  /** Accept http:// URLs (otherwise https only). */
  allowHttp: boolean;
}

export class WebhookUrlError extends Error {
  override name = 'WebhookUrlError';
  constructor(
    message: string,
    /** `invalid_url`, `scheme_not_allowed` or `blocked_address`. */
    readonly reason: 'invalid_url' | 'scheme_not_allowed' | 'blocked_address',
  ) {
    super(message);
  }
}

/** The error code a refused DNS answer fails the connection with. */
export const BLOCKED_CODE = 'EWEBHOOKBLOCKED';

/** Parses and checks a receiving URL; throws WebhookUrlError saying why it is refused. */
export function checkWebhookUrl(raw: string, policy: AddressPolicy): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new WebhookUrlError('url is not a valid absolute URL', 'invalid_url');
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && policy.allowHttp)) {
    throw new WebhookUrlError(policy.allowHttp ? 'url must use https or http' : 'url must use https', 'scheme_not_allowed');
  }
  if (url.username || url.password) throw new WebhookUrlError('url must not carry credentials', 'invalid_url');
  if (!url.hostname) throw new WebhookUrlError('url has no host', 'invalid_url');
  if (!policy.allowPrivateNetworks) {
    const range = addressRange(url.hostname);
    if (range !== null && range !== 'unicast') {
      throw new WebhookUrlError(`url points to a ${range} address; only public addresses receive webhooks`, 'blocked_address');
    }
    if (range === null && isLocalName(url.hostname)) {
      throw new WebhookUrlError('url points to a local host name; only public addresses receive webhooks', 'blocked_address');
    }
  }
  return url;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for net/tls connect options: resolves every address of the name, fails with
 * EWEBHOOKBLOCKED when any of them is not public (unless allowed), else returns the checked ones.
 */
export function safeLookup(policy: AddressPolicy) {
  return (hostname: string, options: { all?: boolean; family?: number | string } | number, callback: LookupCallback): void => {
    const family = typeof options === 'number' ? options : Number(options.family ?? 0) || 0;
    dnsLookup(hostname, { all: true, verbatim: true, family }, (err, addresses) => {
      if (err) return callback(err, []);
      const list = addresses as LookupAddress[];
      if (list.length === 0) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), []);
      if (!policy.allowPrivateNetworks) {
        const bad = list.find((a) => !isPublicAddress(a.address));
        if (bad) {
          const blocked: NodeJS.ErrnoException = new Error(`${hostname} resolves to a ${addressRange(bad.address)} address`);
          blocked.code = BLOCKED_CODE;
          return callback(blocked, []);
        }
      }
      if (typeof options === 'object' && options.all) return callback(null, list);
      callback(null, list[0]!.address, list[0]!.family);
    });
  };
}
