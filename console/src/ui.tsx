import type { ButtonHTMLAttributes, ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";
import { ApiError } from "./api";

/** Data loaded by `load`, again when `deps` change or on `reload()`; its error as an ApiError. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]) {
  const [state, setState] = useState<{ data?: T; error?: ApiError; loading: boolean }>({ loading: true });
  const [version, setVersion] = useState(0);
  useEffect(() => {
    let current = true;
    setState((previous) => ({ ...previous, loading: true }));
    load().then(
      (data) => current && setState({ data, loading: false }),
      (error) => current && setState({ error: asApiError(error), loading: false }),
    );
    return () => {
      current = false;
    };
  }, [...deps, version]);
  return { ...state, reload: () => setVersion((v) => v + 1) };
}

export const asApiError = (error: unknown) =>
  error instanceof ApiError ? error : new ApiError(0, "The service could not be reached");

/** Progress, announced to screen readers. */
export function Loading({ label }: { label: string }) {
  return (
    <p class="loading" role="status">
      <span class="spinner" aria-hidden="true" />
      {label}…
    </p>
  );
}

/** A refused or failed request, with the API's own message. */
export function ErrorNote({ error, prefix }: { error: ApiError; prefix?: string }) {
  return (
    <div class="error" role="alert">
      {prefix && <strong>{prefix}: </strong>}
      {error.status > 0 && <span class="status">{error.status} </span>}
      {error.message}
    </div>
  );
}

/** An instant in the browser's time zone, the exact one on hover. */
export function Time({ at }: { at: string | null | undefined }) {
  if (!at) return <span>never</span>;
  return (
    <time dateTime={at} title={at}>
      {new Date(at).toLocaleString()}
    </time>
  );
}

/** Whether a right's controls show: "hidden" for a read-only key; else the reason they are disabled, or "allowed". */
export type Permission = { state: "allowed" } | { state: "hidden" } | { state: "disabled"; reason: string };

type ButtonProps = ButtonHTMLAttributes & { permission?: Permission; busy?: boolean; children: ComponentChildren };

/**
 * A button for a write: absent for a read-only key; disabled with the reason on hover (and for screen readers) where
 * the role lacks the right; disabled while its request is under way.
 */
export function ActionButton({ permission = { state: "allowed" }, busy = false, children, onClick, ...rest }: ButtonProps) {
  if (permission.state === "hidden") return null;
  const reason = permission.state === "disabled" ? permission.reason : undefined;
  return (
    <button
      type="button"
      {...rest}
      title={reason ?? (rest.title as string | undefined)}
      aria-disabled={reason || busy ? "true" : undefined}
      // aria-disabled rather than disabled, so that the reason shows on hover and the button keeps its focus; a click
      // then does nothing, a form's submit included.
      onClick={reason || busy ? (event) => event.preventDefault() : onClick}
    >
      {children}
    </button>
  );
}

/** Runs a write: its progress and its error, shown where the control is. */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError>();
  const run = async (write: () => Promise<unknown>) => {
    setBusy(true);
    setError(undefined);
    try {
      await write();
      return true;
    } catch (refused) {
      setError(asApiError(refused));
      return false;
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, run, clear: () => setError(undefined) };
}
