import { expect } from 'chai';
import type { AuthenticationProviderArgs, SaslAuthenticateArgs } from 'kafkajs';
import { challengeStatus, clientInitialResponse, oauthBearerAuthenticator } from '../../../src/kafka/oauthbearer-authenticator.js';

/** A broker's side of the SASL exchange: answers each client message in turn, as Kafka BYTES. */
function exchange(answers: readonly string[]): { args: AuthenticationProviderArgs; sent: string[] } {
  const sent: string[] = [];
  const saslAuthenticate = async <T>({ request, response }: SaslAuthenticateArgs<T>): Promise<T | void> => {
    const bytes = await request.encode();
    expect(bytes.readInt32BE(0)).to.equal(bytes.length - 4);
    sent.push(bytes.subarray(4).toString());
    const answer = Buffer.from(answers[sent.length - 1] ?? '');
    const field = Buffer.concat([Buffer.alloc(4), answer]);
    field.writeInt32BE(answer.length);
    if (response === undefined) return undefined;
    return response.parse(await response.decode(field));
  };
  return { args: { host: '127.0.0.1', port: 9092, logger: undefined as never, saslAuthenticate }, sent };
}

describe('the OAUTHBEARER exchange', () => {
  it('sends the token and the extensions as RFC 7628 and KIP-342 lay them out', () => {
    expect(clientInitialResponse({ value: 'abc' }).toString()).to.equal('n,,\u0001auth=Bearer abc\u0001\u0001');
    expect(clientInitialResponse({ value: 'abc', extensions: { logicalCluster: 'lkc-1', identityPoolId: 'pool-2' } }).toString()).to.equal(
      'n,,\u0001auth=Bearer abc\u0001logicalCluster=lkc-1\u0001identityPoolId=pool-2\u0001\u0001',
    );
  });

  it('succeeds on an empty answer, with one message sent', async () => {
    const { args, sent } = exchange(['']);
    await oauthBearerAuthenticator(async () => ({ value: 'good' }))(args).authenticate();
    expect(sent).to.deep.equal(['n,,\u0001auth=Bearer good\u0001\u0001']);
  });

  it("ends a refused exchange with a lone SOH and fails with the broker's status, not the token", async () => {
    const { args, sent } = exchange(['{"status":"invalid_token"}', '']);
    const error = await oauthBearerAuthenticator(async () => ({ value: 'secret-token' }))(args)
      .authenticate()
      .then(() => undefined, (e: unknown) => e as Error);
    expect(error?.name).to.equal('KafkaJSSASLAuthenticationError');
    expect(error?.message).to.equal('SASL OAUTHBEARER authentication failed: the broker refused the token (invalid_token)');
    expect(sent).to.have.length(2);
    expect(sent[1]).to.equal('\u0001');
  });

  it('reads only a plain status from the challenge', () => {
    expect(challengeStatus(Buffer.from('{"status":"invalid_token","scope":"x"}'))).to.equal('invalid_token');
    expect(challengeStatus(Buffer.from('{"status":"<script>"}'))).to.equal(undefined);
    expect(challengeStatus(Buffer.from('not json'))).to.equal(undefined);
  });
});
