import { BlockList, isIP, isIPv4 } from 'node:net';
import type { IncomingMessage } from 'node:http';

/** Who sent a request, as the failed-authentication limit counts callers. */
export type ClientAddressOf = (req: IncomingMessage) => string;

/** '::ffff:10.0.0.1' is 10.0.0.1: a dual-stack socket reports IPv4 peers that way. */
function plain(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return mapped === null ? address : mapped[1]!;
}

/** The eight groups of an IPv6 address, `::` expanded. */
function ipv6Groups(address: string): string[] {
  const [head = '', tail] = address.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const missing = 8 - left.length - right.length;
  return [...left, ...Array<string>(Math.max(0, missing)).fill('0'), ...right].map((g) => g.toLowerCase().replace(/^0+(?=.)/, ''));
}

/**
 * The key a caller is counted under: an IPv4 address, or an IPv6 address's /64, since a
 * single host is commonly handed a whole /64 and could otherwise change address per request.
 */
export function addressKey(address: string): string {
  const ip = plain(address);
  if (isIPv4(ip) || isIP(ip) !== 6) return ip;
  return `${ipv6Groups(ip.replace(/%.*$/, '')).slice(0, 4).join(':')}::/64`;
}

function trustList(proxies: readonly string[]): BlockList {
  const list = new BlockList();
  for (const entry of proxies) {
    const [address, prefix] = entry.split('/');
    const type = isIPv4(address!) ? 'ipv4' : 'ipv6';
    if (prefix === undefined) list.addAddress(address!, type);
    else list.addSubnet(address!, Number(prefix), type);
  }
  return list;
}

/**
 * The client's address: the connection's peer, unless the peer is one of TRUSTED_PROXIES.
 * Then X-Forwarded-For is read from the right, each trusted hop skipped, and the first
 * address no trusted proxy vouches for is the client; what a client writes into the
 * header itself lies to the left of it and is never reached. Without TRUSTED_PROXIES the
 * header is ignored, since anyone can send it.
 */
export function createClientAddressOf(trustedProxies: readonly string[]): ClientAddressOf {
  const peerOf = (req: IncomingMessage): string => plain(req.socket.remoteAddress ?? 'unknown');
  if (trustedProxies.length === 0) return (req) => addressKey(peerOf(req));
  const trusted = trustList(trustedProxies);
  const isTrusted = (ip: string): boolean => {
    const family = isIP(ip);
    return family !== 0 && trusted.check(ip, family === 4 ? 'ipv4' : 'ipv6');
  };
  return (req) => {
    let client = peerOf(req);
    if (!isTrusted(client)) return addressKey(client);
    const header = req.headers['x-forwarded-for'];
    const hops = (Array.isArray(header) ? header.join(',') : (header ?? '')).split(',').map((h) => plain(h.trim()));
    for (let i = hops.length - 1; i >= 0; i -= 1) {
      const hop = hops[i]!;
      // A hop that is not an address was not written by a proxy we trust: stop at the last one that vouched.
      if (isIP(hop) === 0) break;
      client = hop;
      if (!isTrusted(hop)) break;
    }
    return addressKey(client);
  };
}
