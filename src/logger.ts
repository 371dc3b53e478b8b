// The one logger (pino). Secrets never reach the log: authorization headers, cookies, passwords,
// keys, tokens and webhook secrets are redacted, and api_key query parameters are cut from URLs.
import pino, { type Logger } from 'pino';

export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-api-key"]',
  'headers.authorization',
  'headers.cookie',
  'res.headers["set-cookie"]',
  '*.password',
  '*.api_key',
  '*.session_token',
  '*.secret',
  '*.token',
  '*.audio',
];

/** Strips credentials (the realtime WebSocket accepts ?api_key=) and e-mail addresses (an operator's look-up) from the query string. */
export function scrubUrl(url: string): string {
  return url.replace(/([?&](?:api_key|token|session_token|email)=)[^&#]*/gi, '$1[Redacted]');
}

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'gateway' },
      redact: { paths: REDACT_PATHS, censor: '[Redacted]' },
      serializers: {
        req: (req: { method: string; url: string; ip?: string; socket?: { remoteAddress?: string } }) => ({
          method: req.method,
          url: scrubUrl(req.url),
          remote: req.ip ?? req.socket?.remoteAddress,
        }),
        res: (res: { statusCode: number }) => ({ status: res.statusCode }),
        err: pino.stdSerializers.err,
      },
    },
    destination,
  );
}

/**
 * The access log: one line per request, written without redaction (the most frequent line;
 * without redaction it costs 4.8 µs instead of 11.6, measured). Safe by construction: it carries
 * only what the `req` serializer keeps (method, URL with credentials cut, remote address) and
 * numbers, never headers or bodies. Anything else goes through the redacting logger.
 */
export function accessLogger(logger: Logger): Logger {
  return logger.child({}, { redact: { paths: [] } });
}

type Log = (obj: unknown, ...args: unknown[]) => void;

/**
 * A request's logger (fastify's `request.log`), made only when something logs through it: most
 * requests never do (the access line goes through accessLogger), and pino's `child` cost 4 µs per
 * request in the chat profile. Carries the request id binding as fastify's own child would.
 */
export class LazyChildLogger {
  #real: Logger | undefined;

  constructor(
    private readonly parent: Logger,
    private readonly bindings: pino.Bindings,
    private readonly options: pino.ChildLoggerOptions,
  ) {}

  get real(): Logger {
    return (this.#real ??= this.parent.child(this.bindings, this.options));
  }

  get level(): pino.LevelWithSilentOrString {
    return this.#real?.level ?? this.parent.level;
  }

  set level(level: pino.LevelWithSilentOrString) {
    this.real.level = level;
  }

  fatal(obj: unknown, ...args: unknown[]): void {
    (this.real.fatal as Log)(obj, ...args);
  }

  error(obj: unknown, ...args: unknown[]): void {
    (this.real.error as Log)(obj, ...args);
  }

  warn(obj: unknown, ...args: unknown[]): void {
    (this.real.warn as Log)(obj, ...args);
  }

  info(obj: unknown, ...args: unknown[]): void {
    (this.real.info as Log)(obj, ...args);
  }

  debug(obj: unknown, ...args: unknown[]): void {
    (this.real.debug as Log)(obj, ...args);
  }

  trace(obj: unknown, ...args: unknown[]): void {
    (this.real.trace as Log)(obj, ...args);
  }

  silent(): void {}

  child(bindings: pino.Bindings, options?: pino.ChildLoggerOptions): Logger {
    return this.real.child(bindings, options);
  }
}
