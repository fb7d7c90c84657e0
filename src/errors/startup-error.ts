/**
 * A failure to start whose message is the whole story: what is wrong and what to check.
 * main() prints it as the process's one last line, without a stack, so the message must be
 * safe to show (no secret, no token).
 */
export class StartupError extends Error {
  override readonly name = 'StartupError';
}
