import { useState } from "preact/hooks";

/**
 * A copy button for an id or a secret: "Copied" shown beside it and announced (a status region), or, where the
 * browser refuses the clipboard, what to do instead.
 */
export function CopyButton({ text, what }: { text: string; what: string }) {
  const [outcome, setOutcome] = useState("");
  const copy = () =>
    navigator.clipboard.writeText(text).then(
      () => setOutcome("Copied"),
      () => setOutcome("Not copied: select it and copy"),
    );
  return (
    <>
      <button type="button" class="copy" onClick={() => void copy()}>
        Copy<span class="visually-hidden"> {what}</span>
      </button>
      <span role="status" class="copied">
        {outcome}
      </span>
    </>
  );
}

/** An id as text, with its copy button. */
export function CopyableId({ id, what }: { id: string; what: string }) {
  return (
    <span class="copyable">
      <code>{id}</code> <CopyButton text={id} what={what} />
    </span>
  );
}

/** A secret the API answers once (a key, a token, a webhook's signing secret): shown this once, to copy now. */
export function ShownOnce({ label, secret }: { label: string; secret: string }) {
  return (
    <div class="shown-once" role="status">
      <p>
        <strong>{label}</strong> Shown this once: you will not see it again, so copy it now.
      </p>
      <code>{secret}</code> <CopyButton text={secret} what={label} />
    </div>
  );
}
