import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

/** A Kafka message as a reader sees it: key, value and headers as UTF-8 text. */
export interface KafkaRecord {
  readonly key: string | null;
  readonly value: string | null;
  readonly headers: Readonly<Record<string, string>>;
}

interface MessageObject {
  readonly contentType?: string;
  readonly headers?: object;
  readonly payload?: object;
  readonly bindings?: { readonly kafka?: { readonly key?: object } };
}

/** The parts of an AsyncAPI 3.0 document that say what a message on a channel must be. */
export interface AsyncApiContract {
  readonly defaultContentType?: string;
  readonly channels: Record<string, { readonly address: string; readonly messages: Record<string, { readonly $ref: string }> }>;
  readonly components: { readonly schemas: object; readonly messages: Record<string, MessageObject> };
}

export interface MessageCheck {
  /** The names of the messages the channel at `address` carries. */
  messagesOf(address: string): string[];
  /** What is wrong with `record` as the message `name` (key, headers and value); empty when it is valid. */
  problems(name: string, record: KafkaRecord): string[];
}

/**
 * Checks real Kafka messages against an AsyncAPI document with AJV, the validator the
 * gateway itself uses: each schema is compiled under a root that holds the document's
 * components, so that its #/components/schemas references resolve as in the document.
 */
export function messageCheck(document: AsyncApiContract): MessageCheck {
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats(ajv);
  const compiled = new Map<string, ValidateFunction>();
  const compile = (key: string, schema: object): ValidateFunction => {
    let validate = compiled.get(key);
    if (validate === undefined) {
      validate = ajv.compile({ allOf: [schema], components: document.components });
      compiled.set(key, validate);
    }
    return validate;
  };
  const check = (what: string, validate: ValidateFunction, value: unknown): string[] =>
    validate(value) ? [] : [`${what}: ${ajv.errorsText(validate.errors)}`];

  return {
    messagesOf(address) {
      const channel = Object.values(document.channels).find((c) => c.address === address);
      if (channel === undefined) throw new Error(`the document has no channel at ${address}`);
      return Object.values(channel.messages).map((m) => m.$ref.replace('#/components/messages/', ''));
    },
    problems(name, record) {
      const message = document.components.messages[name];
      if (message === undefined) throw new Error(`the document has no message ${name}`);
      const out: string[] = [];
      if (message.headers !== undefined) out.push(...check('headers', compile(`${name} headers`, message.headers), record.headers));
      const key = message.bindings?.kafka?.key;
      if (key !== undefined) out.push(...check('key', compile(`${name} key`, key), record.key));
      if (message.payload !== undefined) {
        const contentType = message.contentType ?? document.defaultContentType;
        let value: unknown = record.value;
        if (contentType === 'application/json') {
          try {
            value = JSON.parse(record.value ?? '');
          } catch {
            return [...out, 'value: not JSON'];
          }
        }
        out.push(...check('value', compile(`${name} payload`, message.payload), value));
      }
      return out;
    },
  };
}
