/**
 * A bad configuration value. main() prints its message as the one line the process
 * leaves before it exits, so the message names the variable and never quotes a secret.
 */
export class ConfigError extends Error {
  readonly variable: string;
  constructor(variable: string, problem: string) {
    super(`${variable}: ${problem}`);
    this.name = 'ConfigError';
    this.variable = variable;
  }
}
