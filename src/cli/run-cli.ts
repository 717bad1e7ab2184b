/** A mistake of the operator's: printed as a one-line message and exit code 2, never as a stack trace. */
export class UsageError extends Error {}

const isParseArgsError = (error: unknown) =>
  error instanceof Error && "code" in error && String(error.code).startsWith("ERR_PARSE_ARGS");

/** Where a command writes: a process's own streams, or (in the CLI tests) strings collected in memory. */
export interface Streams {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
}

/**
 * Runs a command: its JSON result (if any) alone on stdout, every message on stderr; answers the exit code,
 * 0 on success, 2 on a usage error (with `usage` after a malformed command line), 1 on anything else.
 */
export async function runCommand(main: () => Promise<unknown>, usage: string, streams: Streams): Promise<number> {
  try {
    const result = await main();
    if (result !== undefined) streams.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    return 0;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    streams.stderr.write(isParseArgsError(error) ? `error: ${message}\n\n${usage}\n` : `error: ${message}\n`);
    return error instanceof UsageError || isParseArgsError(error) ? 2 : 1;
  }
}

/** Runs a command-line entry point as `runCommand` does, on this process's streams, and exits with its code. */
export function runCli(main: () => Promise<unknown>, usage: string): void {
  runCommand(main, usage, process).then((code) => process.exit(code));
}
