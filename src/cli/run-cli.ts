/** A mistake of the operator's: printed as a one-line message and exit code 2, never as a stack trace. */
export class UsageError extends Error {}

const isParseArgsError = (error: unknown) =>
  error instanceof Error && "code" in error && String(error.code).startsWith("ERR_PARSE_ARGS");

/**
 * Runs a command-line entry point: its JSON result (if any) alone on stdout, every message on stderr;
 * exit 0 on success, 2 on a usage error (with `usage` after a malformed command line), 1 on anything else.
 */
export function runCli(main: () => Promise<unknown>, usage: string): void {
  main().then(
    (result) => {
      if (result !== undefined) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
      process.exit(0);
    },
    (error: unknown) => {
      const message = error instanceof Error ? error.message : String(error);
      process.stderr.write(isParseArgsError(error) ? `error: ${message}\n\n${usage}\n` : `error: ${message}\n`);
      process.exit(error instanceof UsageError || isParseArgsError(error) ? 2 : 1);
    },
  );
}
