import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { catalogue, type CommandName } from '../../src/commands/catalogue.js';

/**
 * Generators of hostile requests for the fuzz suite (test/integration/api/fuzz.test.ts).
 * Bytes are carried as latin1 strings (one char per byte), so a counterexample prints
 * readably and can hold what no client library would send: invalid UTF-8, control
 * characters, broken percent-encoding.
 */

/** What a generated request may need from the gateway under test, fixed before the run. */
export interface FuzzContext {
  readonly orgId: string;
  readonly projectId: string;
  /** Authorization header values, by what is wrong with them (or not). */
  readonly credentials: Readonly<Record<CredentialKind, string>>;
  /** A second organization, with a caller of its own, for replaying cursors across tenants. */
  readonly otherOrg: { readonly orgId: string; readonly authorization: string };
  readonly cursors: CursorSamples;
}

export type CredentialKind = 'valid' | 'otherOrg' | 'noScopes' | 'expired' | 'wrongSecret' | 'algNone';

export interface CursorSamples {
  /** Issued for the project with no filter. */
  readonly plain: string;
  /** Issued for the project with `domain` as the only filter. */
  readonly filtered: string;
  readonly domain: string;
  /** The position of `plain`, MAC'd with another key. */
  readonly foreignKey: string;
}

export interface FuzzRequest {
  readonly method: string;
  /** Request-target bytes. */
  readonly target: string;
  /** Header lines in order; Host and Connection: close are added when absent. */
  readonly headers: readonly (readonly [string, string])[];
  readonly body: string;
  /** The client half-closes once written, as one that gives up mid-body: no answer is then acceptable. */
  readonly givesUp: boolean;
  /** The protocol of the request line; HTTP/1.1 unless the case is about it. */
  readonly version?: string;
  /** Send no Host header, which HTTP/1.1 requires. */
  readonly withoutHost?: boolean;
}

/** A cursor request and the only status a correct gateway may answer it with. */
export interface CursorCase {
  readonly request: FuzzRequest;
  readonly expected: 200 | 400;
  readonly variant: string;
}

/** The feed, or a command by its catalogue entry's name. */
export type Operation = 'events' | CommandName;

const entryOf = (op: CommandName) => catalogue.find((entry) => entry.name === op)!;

const OWN_METHOD = Object.fromEntries([['events', 'GET'], ...catalogue.map((entry) => [entry.name, entry.http.method.toUpperCase()])]) as Readonly<Record<Operation, string>>;

/** UTF-8 bytes of `text` as a latin1 string. */
export const utf8Bytes = (text: string): string => Buffer.from(text, 'utf8').toString('latin1');

/** Percent-encodes every byte of the UTF-8 form (lone surrogates become U+FFFD first). */
const percentEncoded = (text: string): string => [...Buffer.from(text, 'utf8')].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('');

// ---------------------------------------------------------------- values

export const uuidVariant: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.uuid() },
  fc.uuid().map((u) => u.toUpperCase()),
  fc.uuid().map((u) => u.replace(/-/g, '')),
  fc.uuid().map((u) => `{${u}}`),
  fc.uuid().map((u) => `urn:uuid:${u}`),
  fc.uuid().map((u) => u.slice(0, -1)),
  fc.uuid().map((u) => `${u}0`),
  fc.uuid().map((u) => ` ${u} `),
  fc.constant('00000000-0000-0000-0000-000000000000'),
  fc.constant('ffffffff-ffff-ffff-ffff-ffffffffffff'),
);

const BROKEN_PERCENT = ['%zz', '%', '%0', '%00', '%0a', '%0d%0a', '%ff', '%c0%af', '%e0%80', '%ed%a0%80', '%f4%90%80%80', '%%', '%2', '%G1', '%u0041'];

export const brokenPercent: fc.Arbitrary<string> = fc.constantFrom(...BROKEN_PERCENT);

/** Text that is not ASCII, percent-encoded or sent as raw UTF-8 bytes. */
export const unicodeText: fc.Arbitrary<string> = fc.oneof(
  fc.string({ unit: 'binary', minLength: 1, maxLength: 12 }).map(percentEncoded),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 8 }).map(utf8Bytes),
  fc.constantFrom('%e2%80%ae', '%ef%bb%bf', '%f0%9f%92%a9', '\u00e9', '\u00ff\u00fe'),
);

/** C0 controls and DEL, percent-encoded so that they survive the request line. */
export const controlCharacters: fc.Arbitrary<string> = fc
  .array(fc.integer({ min: 0, max: 0x1f }).chain((c) => fc.constantFrom(c, 0x7f)), { minLength: 1, maxLength: 4 })
  .map((codes) => codes.map((c) => `%${c.toString(16).padStart(2, '0')}`).join(''));

export const longText = (min: number, max: number): fc.Arbitrary<string> =>
  fc.tuple(fc.integer({ min, max }), fc.constantFrom('a', '0', '%41', '-')).map(([n, unit]) => unit.repeat(Math.ceil(n / unit.length)));

// ---------------------------------------------------------------- paths

export const pathSegment: fc.Arbitrary<string> = fc.oneof(
  { weight: 5, arbitrary: fc.uuid() },
  { weight: 3, arbitrary: uuidVariant.map(encodeURIComponent) },
  brokenPercent,
  fc.constantFrom('..', '.', '%2e%2e', '%2F', '', 'null', '-1', '+', ';', '%3B', '*'),
  unicodeText,
  controlCharacters,
  longText(200, 17_000),
);

/** A path of the feed or of a command, its ids taken in order from `ids` (the last for any beyond three). */
export function operationPath(operation: Operation, ids: readonly [string, string, string]): string {
  if (operation === 'events') return `/core/api/v1/projects/${ids[0]}/events`;
  let next = 0;
  return `/core/api/v1${entryOf(operation).http.path.replace(/:[a-z_]+/g, () => ids[Math.min(next++, 2)]!)}`;
}

const COMMANDS = catalogue.map((entry) => entry.name);

export const operation: fc.Arbitrary<Operation> = fc.constantFrom<Operation>('events', ...COMMANDS);

const method = (op: Operation): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 6, arbitrary: fc.constant(OWN_METHOD[op]) },
    fc.constantFrom('GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE', 'CONNECT', 'get', 'FOO', 'PROPFIND'),
  );

// ---------------------------------------------------------------- query strings

const QUERY_NAMES = ['cursor', 'limit', 'domain', 'entity', 'action', 'device_id', 'fleet_id', 'since', 'until'];

export const queryKey: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...QUERY_NAMES) },
  fc.constantFrom('a[]', 'a[0]', 'limit[]', 'limit[0]', 'domain[]', 'domain[a]', '__proto__', 'constructor', 'toString', 'hasOwnProperty', '', 'LIMIT', 'limit%00'),
  brokenPercent,
  unicodeText,
);

export const queryValue: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.integer({ min: -1000, max: 1000 }).map(String) },
  fc.constantFrom('1e400', '-0', '0x10', '5.5', '  5', '99999999999999999999999', 'NaN', 'Infinity', 'true', ''),
  uuidVariant.map(encodeURIComponent),
  fc.constantFrom(
    '2026-01-01T00:00:00Z',
    '0000-01-01T00:00:00Z',
    '9999-12-31T23:59:59.999999999Z',
    '2026-13-01T00:00:00Z',
    '2026-01-01T00:00:00%2B25:00',
    '2026-02-30T00:00:00Z',
    '1969-12-31T23:59:60Z',
  ),
  fc.constantFrom('%5C', '%27', '%22', '%7Ba:String%7D', '%5C%27', "'", '\\', '%09', 'a%09b%0Ac'),
  unicodeText,
  controlCharacters,
  brokenPercent,
  longText(100, 9000),
);

export const queryString: fc.Arbitrary<string> = fc.oneof(
  { weight: 8, arbitrary: fc.array(fc.tuple(queryKey, queryValue), { minLength: 1, maxLength: 8 }).map((pairs) => pairs.map(([k, v]) => `${k}=${v}`).join('&')) },
  fc.constantFrom('', '&', '&&&', '=', '==', '?', '#', 'limit', 'limit=', 'limit=1&limit=2', 'cursor&cursor', 'domain=a&domain=b'),
);

// ---------------------------------------------------------------- headers

export const orgIdHeader = (ctx: FuzzContext): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 4, arbitrary: fc.constant(ctx.orgId) },
    fc.constantFrom(ctx.orgId.toUpperCase(), ` ${ctx.orgId} `, `${ctx.orgId}, ${ctx.orgId}`, `${ctx.orgId},x`, ctx.otherOrg.orgId, ''),
    uuidVariant,
    fc.string({ unit: 'binary-ascii', maxLength: 40 }),
  );

export const authorizationHeader = (ctx: FuzzContext): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 4, arbitrary: fc.constant(ctx.credentials.valid) },
    fc.constantFrom(...Object.values(ctx.credentials)),
    fc.constantFrom('Bearer', 'Bearer ', 'Bearer  .', 'Basic dXNlcjpwYXNz', 'bearer x.y.z', 'Bearer a.b.c', 'Bearer ....', 'Bearer ===', 'Token abc'),
    fc.constant(ctx.credentials.valid.replace('Bearer ', 'bEaReR    ')),
    fc.constant(`${ctx.credentials.valid}x`),
    fc.constant(ctx.credentials.valid.slice(0, -3)),
    fc.string({ unit: 'binary-ascii', maxLength: 60 }).map((t) => `Bearer ${t}`),
    longText(1000, 17_000).map((t) => `Bearer ${t}`),
  );

export const traceparentHeader: fc.Arbitrary<string> = fc.oneof(
  fc.constant('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'),
  fc.constantFrom(
    '00-00000000000000000000000000000000-0000000000000000-01',
    'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
    '00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01',
    '00-xyz',
    '-',
    '',
  ),
  fc.string({ unit: 'binary-ascii', maxLength: 80 }),
  longText(100, 9000),
);

export const idempotencyKeyHeader: fc.Arbitrary<string> = fc.oneof(
  fc.stringMatching(/^[!-~]{1,40}$/),
  fc.constantFrom('', ' ', 'a b', '\t', 'k'.repeat(255), 'k'.repeat(256)),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 10 }).map(utf8Bytes),
  longText(256, 9000),
);

export const contentTypeHeader: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constant('application/json') },
  fc.constantFrom(
    'application/json; charset=utf-8',
    'application/json; charset=latin1',
    'application/json; charset=utf-16',
    'application/json; charset=bogus',
    'application/merge-patch+json',
    'APPLICATION/JSON',
    'application/json;',
    'application/json;;;',
    'application/json; a="unterminated',
    'application/*',
    '*/*',
    'text/plain',
    'text/json',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x',
    'application/xml',
    '',
    ';',
  ),
  fc.string({ unit: 'binary-ascii', maxLength: 40 }),
);

const HEADER_NAMES = ['Authorization', 'ORG-ID', 'traceparent', 'tracestate', 'Idempotency-Key', 'Content-Type', 'If-None-Match', 'X-Request-Id', 'Accept', 'Accept-Encoding', 'Expect', 'User-Agent', 'Host', 'Cookie', 'Range', 'Forwarded', 'X-Forwarded-For'];

/** A header value as bytes: printable junk, latin1 high bytes, UTF-8, control bytes, or up to past the 16 KiB limit. */
export const junkHeaderValue: fc.Arbitrary<string> = fc.oneof(
  fc.string({ unit: 'binary-ascii', maxLength: 60 }),
  fc.uint8Array({ minLength: 1, maxLength: 30 }).map((bytes) => Buffer.from(bytes.map((b) => (b === 13 || b === 10 ? 32 : b))).toString('latin1')),
  fc.string({ unit: 'grapheme', maxLength: 20 }).map(utf8Bytes),
  fc.constantFrom('*', 'W/"x"', '100-continue', 'nonsense-expectation', 'bytes=0-1', ' ', 'a\rb', 'a\nb', 'a\r\n b'),
  longText(1000, 17_000),
);

/** Extra header lines: known names with junk, duplicates of the credentials, and names that are not tokens. */
export const extraHeaders: fc.Arbitrary<(readonly [string, string])[]> = fc.array(
  fc.tuple(
    fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom(...HEADER_NAMES) },
      fc.stringMatching(/^[A-Za-z][A-Za-z0-9-]{0,30}$/),
      fc.constantFrom('Bad Name', 'x:y', '', '\u00e9t\u00e9', 'X-\u0001'),
    ),
    junkHeaderValue,
  ),
  { maxLength: 4 },
);

// ---------------------------------------------------------------- bodies

const nest = (depth: number, open: '[' | '{"a":', leaf: string): string => open.repeat(depth) + leaf + (open === '[' ? ']' : '}').repeat(depth);

export const deeplyNested: fc.Arbitrary<string> = fc
  .tuple(fc.integer({ min: 1, max: 40_000 }), fc.constantFrom<'[' | '{"a":'>('[', '{"a":'), fc.constantFrom('1', '"x"', 'null', '{}'))
  .map(([depth, open, leaf]) => nest(depth, open, leaf));

export const hugeNumber: fc.Arbitrary<string> = fc.constantFrom('1e400', '-1e400', '1E+400', '1e-400', '123456789012345678901234567890', '-0', '0.1e309', '4.9e-324', '1.7976931348623157e308');

export const protoKeys: fc.Arbitrary<string> = fc.constantFrom(
  '{"__proto__":{"polluted":true}}',
  '{"a":{"__proto__":null}}',
  '{"\\u005f_proto__":1}',
  '{"constructor":{"prototype":{"polluted":true}}}',
  '{"prototype":1,"constructor":2}',
  '{"meta":{"__proto__":[]}}',
);

export const duplicateKeys: fc.Arbitrary<string> = fc.constantFrom('{"a":1,"a":{"b":2},"a":"x"}', '{"display_name":"a","display_name":7}', '{"meta":{},"meta":[]}');

export const oddStrings: fc.Arbitrary<string> = fc.constantFrom('"\\ud800"', '"\\udfff\\ud800"', '"\\u0000"', '"a\\u0000b"', '"\\uFFFF"', '"\\u202e"', '"\\\\"', '"\'"');

const jsonText: fc.Arbitrary<string> = fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v));

const enrollmentLike: fc.Arbitrary<string> = fc
  .record(
    {
      display_name: fc.oneof(fc.string({ maxLength: 300 }), fc.integer(), fc.constant(null)),
      enrollment_type: fc.oneof(fc.string({ maxLength: 80 }), fc.boolean()),
      external_id: fc.string({ unit: 'grapheme', maxLength: 300 }),
      meta: fc.oneof(fc.dictionary(fc.string({ maxLength: 10 }), fc.jsonValue({ maxDepth: 3 })), fc.jsonValue({ maxDepth: 1 })),
      extra: fc.string(),
    },
    { requiredKeys: [] },
  )
  .map((v) => JSON.stringify(v));

/** A JSON text cut at a random point. */
const truncatedJson: fc.Arbitrary<string> = fc
  .tuple(fc.oneof(jsonText, enrollmentLike), fc.double({ min: 0, max: 1, noNaN: true }))
  .filter(([text]) => text.length > 1)
  .map(([text, at]) => text.slice(0, Math.max(1, Math.floor(text.length * at))));

/** Random bytes 0x80-0xff (never valid UTF-8 on their own) put into a JSON string value. */
const invalidUtf8: fc.Arbitrary<string> = fc
  .uint8Array({ minLength: 1, maxLength: 8 })
  .map((bytes) => `{"display_name":"${Buffer.from(bytes.map((b) => 0x80 | b)).toString('latin1')}","a":"\u00c3\u0028"}`);

/** Body text, as bytes (latin1). */
export const bodyText: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: jsonText.map(utf8Bytes) },
  { weight: 3, arbitrary: enrollmentLike.map(utf8Bytes) },
  { weight: 2, arbitrary: deeplyNested },
  { weight: 2, arbitrary: fc.tuple(deeplyNested, fc.constantFrom('{"meta":%s}', '{"policy":%s}', '{"a":1,"b":%s}')).map(([inner, shape]) => shape.replace('%s', inner)) },
  hugeNumber.map((n) => `{"meta":{"n":${n}},"a":${n}}`),
  protoKeys,
  duplicateKeys,
  oddStrings.map((s) => `{"display_name":${s},"policy":${s}}`),
  truncatedJson.map(utf8Bytes),
  invalidUtf8,
  fc.constantFrom('', ' ', '\r\n', '\u00ef\u00bb\u00bf{}', 'null', 'true', '1', '[]', '""', '{}', '{"a":1}', "{'a':1}", '{"a":1,}', '{a:1}', 'NaN'),
  fc.string({ unit: 'binary', maxLength: 40 }).map(utf8Bytes),
  longText(60_000, 70_000).map((t) => `{"display_name":"${t}"}`),
);

export const contentEncoding: fc.Arbitrary<string | undefined> = fc.oneof(
  { weight: 8, arbitrary: fc.constant(undefined) },
  fc.constantFrom('identity', 'gzip', 'deflate', 'br', 'GZIP', 'x-junk', 'gzip, gzip', 'compress', ''),
);

/** Body bytes for a Content-Encoding: gzip gets a real gzip of the text half the time, and the raw text otherwise. */
const encodedBody = (text: string, encoding: string | undefined, compress: boolean): string =>
  encoding === 'gzip' && compress ? gzipSync(Buffer.from(text, 'latin1')).toString('latin1') : text;

// ---------------------------------------------------------------- requests

function credentials(ctx: FuzzContext): (readonly [string, string])[] {
  return [
    ['Authorization', ctx.credentials.valid],
    ['ORG-ID', ctx.orgId],
  ];
}

function withBody(headers: (readonly [string, string])[], body: string, contentType = 'application/json'): (readonly [string, string])[] {
  return [...headers, ['Content-Type', contentType], ['Content-Length', String(body.length)]];
}

function request(method: string, target: string, headers: readonly (readonly [string, string])[], body = '', givesUp = false): FuzzRequest {
  return { method, target, headers, body, givesUp };
}

/** Any operation and method, with each path id generated; credentials valid. */
export const pathRequest = (ctx: FuzzContext): fc.Arbitrary<FuzzRequest> =>
  operation.chain((op) =>
    fc.tuple(method(op), fc.tuple(pathSegment, pathSegment, pathSegment), fc.constantFrom('', '/', '//', '/x', '?', '%2F', '/..')).map(([m, ids, suffix]) => {
      const target = `${operationPath(op, ids)}${suffix}`;
      return op === 'events' ? request(m, target, credentials(ctx)) : request(m, target, withBody(credentials(ctx), '{}'), '{}');
    }),
  );

/** A valid path with a generated query string; mostly the feed, whose query it is. */
export const queryRequest = (ctx: FuzzContext): fc.Arbitrary<FuzzRequest> =>
  fc.tuple(fc.oneof({ weight: 4, arbitrary: fc.constant<Operation>('events') }, operation), queryString).map(([op, query]) => {
    const target = `${operationPath(op, [ctx.projectId, ctx.projectId, ctx.projectId])}?${query}`;
    return op === 'events' ? request('GET', target, credentials(ctx)) : request(OWN_METHOD[op], target, withBody(credentials(ctx), '{}'), '{}');
  });

/** A valid request of any operation whose headers are generated. */
export const headerRequest = (ctx: FuzzContext): fc.Arbitrary<FuzzRequest> =>
  fc
    .record({
      op: operation,
      authorization: fc.option(authorizationHeader(ctx), { freq: 8 }),
      orgId: fc.option(orgIdHeader(ctx), { freq: 8 }),
      traceparent: fc.option(traceparentHeader),
      idempotencyKey: fc.option(idempotencyKeyHeader),
      contentType: fc.option(contentTypeHeader, { freq: 8 }),
      extra: extraHeaders,
    })
    .map(({ op, authorization, orgId, traceparent, idempotencyKey, contentType, extra }) => {
      const headers: (readonly [string, string])[] = [];
      if (authorization !== null) headers.push(['Authorization', authorization]);
      if (orgId !== null) headers.push(['ORG-ID', orgId]);
      if (traceparent !== null) headers.push(['traceparent', traceparent]);
      if (idempotencyKey !== null) headers.push(['Idempotency-Key', idempotencyKey]);
      headers.push(...extra);
      const target = operationPath(op, [ctx.projectId, ctx.projectId, ctx.projectId]);
      if (op === 'events') return request('GET', target, headers);
      // The command's own example body: a valid request but for what was generated.
      const body = JSON.stringify(entryOf(op).docs.example.body);
      if (contentType !== null) headers.push(['Content-Type', contentType]);
      headers.push(['Content-Length', String(body.length)]);
      return request(OWN_METHOD[op], target, headers, body);
    });

/** A command with a generated body, media type and encoding; credentials valid. */
export const bodyRequest = (ctx: FuzzContext): fc.Arbitrary<FuzzRequest> =>
  fc
    .record({
      op: fc.constantFrom(...COMMANDS),
      text: bodyText,
      contentType: contentTypeHeader,
      encoding: contentEncoding,
      compress: fc.boolean(),
    })
    .map(({ op, text, contentType, encoding, compress }) => {
      const body = encodedBody(text, encoding, compress);
      const headers = withBody(credentials(ctx), body, contentType);
      if (encoding !== undefined) headers.push(['Content-Encoding', encoding]);
      return request(OWN_METHOD[op], operationPath(op, [ctx.projectId, ctx.projectId, ctx.projectId]), headers, body);
    });

/** Chunked bodies, good and broken; bodies shorter or longer than their Content-Length; contradictory framing. */
export const framingRequest = (ctx: FuzzContext): fc.Arbitrary<FuzzRequest> => {
  const target = operationPath('edge-policy', [ctx.projectId, ctx.projectId, ctx.projectId]);
  const base: (readonly [string, string])[] = [...credentials(ctx), ['Content-Type', 'application/json']];
  const body = fc.oneof(fc.constant('{"sync":{"every_s":60}}'), jsonText);
  const chunked = fc.tuple(body, fc.array(fc.nat(), { maxLength: 5 })).map(([text, cuts]) => {
    const points = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b);
    const pieces = [0, ...points, text.length].slice(1).map((end, i, all) => text.slice(i === 0 ? 0 : all[i - 1], end)).filter((p) => p !== '');
    return request('PATCH', target, [...base, ['Transfer-Encoding', 'chunked']], `${pieces.map((p) => `${p.length.toString(16)}\r\n${p}\r\n`).join('')}0\r\n\r\n`);
  });
  const badChunks = fc
    .tuple(body, fc.constantFrom('zz', '-1', 'ffffffffffffffffff', '', ' 2', '2;' + 'e'.repeat(20_000), '0x2', '1000'))
    // A chunk announced longer than what follows waits for the rest, as for any slow client; this one gives up.
    .map(([text, size]) => request('PATCH', target, [...base, ['Transfer-Encoding', 'chunked']], `${size}\r\n${text}\r\n0\r\n\r\n`, true));
  const short = fc
    .tuple(body, fc.integer({ min: 1, max: 70_000 }))
    .map(([text, extra]) => request('PATCH', target, [...base, ['Content-Length', String(text.length + extra)]], text, true));
  const long = fc
    .tuple(body, fc.integer({ min: 1, max: 20 }), fc.string({ unit: 'binary-ascii', maxLength: 40 }))
    .map(([text, cut, tail]) => request('PATCH', target, [...base, ['Content-Length', String(Math.max(0, text.length - cut))]], text + tail));
  const contradictory = fc.tuple(body, fc.constantFrom<readonly (readonly [string, string])[]>(
    [['Content-Length', 'abc']],
    [['Content-Length', '-1']],
    [['Content-Length', '1, 2']],
    [['Content-Length', '99999999999999999999']],
    [['Content-Length', '4294967297']],
    [['Content-Length', '2'], ['Content-Length', '3']],
    [['Content-Length', '2'], ['Transfer-Encoding', 'chunked']],
    [['Transfer-Encoding', 'gzip']],
    [['Transfer-Encoding', 'chunked, gzip']],
    [['Transfer-Encoding', 'identity']],
    [['Transfer-Encoding', 'chunked'], ['Transfer-Encoding', 'chunked']],
  ), fc.boolean()).map(([text, framing, close]) => request('PATCH', target, [...base, ...framing], text, close));
  const expectContinue = body.map((text) => request('PATCH', target, [...withBody(base, text), ['Expect', '100-continue']], text));
  const wrongVersion = fc.constantFrom('HTTP/1.0', 'HTTP/2.0', 'HTTP/9.9', 'HTTP/1.1 x', 'http/1.1', 'HTTP/1.').map((version) => ({
    ...request('GET', operationPath('events', [ctx.projectId, ctx.projectId, ctx.projectId]), credentials(ctx)),
    version,
  }));
  const withoutHost = fc.constantFrom<Operation>('events', 'edge-policy').map((op) => ({
    ...(op === 'events' ? request('GET', operationPath(op, [ctx.projectId, ctx.projectId, ctx.projectId]), credentials(ctx)) : request('PATCH', target, withBody(credentials(ctx), '{}'), '{}')),
    withoutHost: true,
  }));
  return fc.oneof(chunked, badChunks, short, long, contradictory, expectContinue, wrongVersion, withoutHost);
};

/** The feed with a cursor that is, or is not, the one issued for exactly this query. */
export const cursorCase = (ctx: FuzzContext): fc.Arbitrary<CursorCase> => {
  const { plain, filtered, domain, foreignKey } = ctx.cursors;
  const feed = (cursor: string, query = '', org: 'own' | 'other' = 'own', project = ctx.projectId): FuzzRequest =>
    request(
      'GET',
      `/core/api/v1/projects/${project}/events?cursor=${percentEncoded(cursor)}${query}`,
      org === 'own'
        ? credentials(ctx)
        : [
            ['Authorization', ctx.otherOrg.authorization],
            ['ORG-ID', ctx.otherOrg.orgId],
          ],
    );
  const limit = fc.option(fc.integer({ min: -5, max: 500 }).map((n) => `&limit=${n}`), { nil: '' });
  const flipped = (cursor: string) =>
    fc.tuple(fc.nat(), fc.integer({ min: 0, max: 6 })).map(([at, bit]) => {
      const i = at % cursor.length;
      return cursor.slice(0, i) + String.fromCharCode(cursor.charCodeAt(i) ^ (1 << bit)) + cursor.slice(i + 1);
    });
  const truncated = (cursor: string) => fc.integer({ min: 1, max: cursor.length - 1 }).map((n) => cursor.slice(0, n));
  const altered = (cursor: string) =>
    fc.oneof(
      flipped(cursor),
      truncated(cursor),
      fc.constantFrom(`${cursor}=`, `${cursor}A`, `${cursor}.`, `.${cursor}`, cursor.replace(/^v1/, 'v2'), cursor.toUpperCase(), cursor.split('.').reverse().join('.'), `${cursor}${cursor}`),
    );
  const rejected = (variant: string, make: fc.Arbitrary<FuzzRequest>): fc.Arbitrary<CursorCase> => make.map((r) => ({ request: r, expected: 400, variant }));
  const accepted = (variant: string, make: fc.Arbitrary<FuzzRequest>): fc.Arbitrary<CursorCase> => make.map((r) => ({ request: r, expected: 200, variant }));
  return fc.oneof(
    accepted('as issued', limit.map((l) => feed(plain, l))),
    accepted('as issued, with its filter', limit.map((l) => feed(filtered, `&domain=${domain}${l}`))),
    rejected('altered', fc.tuple(altered(plain), limit).filter(([c]) => c !== plain).map(([c, l]) => feed(c, l))),
    rejected('altered, with its filter', altered(filtered).filter((c) => c !== filtered).map((c) => feed(c, `&domain=${domain}`))),
    rejected('signed with another key', limit.map((l) => feed(foreignKey, l))),
    rejected('on another filter', fc.constantFrom(`&domain=${domain}`, '&entity=reading', `&action=x`, `&device_id=${ctx.projectId}`, '&since=2020-01-01T00:00:00Z').map((q) => feed(plain, q))),
    rejected('without its filter', fc.constantFrom('', `&domain=${domain}x`, '&entity=reading').map((q) => feed(filtered, q))),
    rejected('on another project', fc.uuid().map((p) => feed(plain, '', 'own', p))),
    rejected('in another organization', fc.constant(feed(plain, '', 'other'))),
  );
};
