import { expect } from 'chai';
import type { IncomingMessage } from 'node:http';
import { addressKey, createClientAddressOf } from '../../../src/http/client-address.js';

function requestFrom(peer: string, forwardedFor?: string): IncomingMessage {
  return { socket: { remoteAddress: peer }, headers: forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor } } as unknown as IncomingMessage;
}

describe('client address', () => {
  it('is the peer, and ignores X-Forwarded-For, when no proxy is trusted', () => {
    const of = createClientAddressOf([]);
    expect(of(requestFrom('203.0.113.9', '198.51.100.1'))).to.equal('203.0.113.9');
    expect(of(requestFrom('::ffff:203.0.113.9'))).to.equal('203.0.113.9');
  });

  it('behind a trusted proxy, is the right-most address no trusted proxy vouches for', () => {
    const of = createClientAddressOf(['10.0.0.0/8', '192.168.1.7']);
    expect(of(requestFrom('10.1.2.3', '198.51.100.1'))).to.equal('198.51.100.1');
    // What the client wrote itself is left of what the proxies appended.
    expect(of(requestFrom('10.1.2.3', '1.1.1.1, 198.51.100.1, 192.168.1.7'))).to.equal('198.51.100.1');
    expect(of(requestFrom('10.1.2.3', 'garbage, 198.51.100.1'))).to.equal('198.51.100.1');
    // Every hop trusted: the left-most hop is the client.
    expect(of(requestFrom('10.1.2.3', '10.9.9.9'))).to.equal('10.9.9.9');
    // No header: the proxy itself.
    expect(of(requestFrom('10.1.2.3'))).to.equal('10.1.2.3');
    // A peer that is not a trusted proxy is the client, whatever it forwards.
    expect(of(requestFrom('203.0.113.9', '198.51.100.1'))).to.equal('203.0.113.9');
  });

  it('counts an IPv6 client by its /64', () => {
    expect(addressKey('2001:db8:1:2:aaaa::1')).to.equal('2001:db8:1:2::/64');
    expect(addressKey('2001:db8:1:2:bbbb:cccc:dddd:eeee')).to.equal('2001:db8:1:2::/64');
    expect(addressKey('::1')).to.equal('0:0:0:0::/64');
    expect(addressKey('fe80::1%eth0')).to.equal('fe80:0:0:0::/64');
  });
});
