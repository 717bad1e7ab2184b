import type { ComponentChildren, ComponentType } from "preact";
import { useEffect, useState } from "preact/hooks";
import { CONSOLE_ROOT } from "./api";

/*
 * The console's pages: each file of pages/ exports the path it answers (`/apps/:appId`, under /console) and its
 * component, so that adding a page is adding a file. The Worker answers the same page for every path under /console.
 */

export interface PageProps {
  params: Record<string, string>;
  query: URLSearchParams;
}

interface PageModule {
  path: string;
  default: ComponentType<PageProps>;
}

const PAGES = Object.values(import.meta.glob<PageModule>("./pages/*.tsx", { eager: true })).map((page) => ({
  page,
  pattern: new RegExp(`^${page.path.replace(/:(\w+)/g, "(?<$1>[^/]+)")}/?$`),
}));

/** A path parameter decoded; null for a malformed escape (`%` not followed by UTF-8 in hex), which decodes to nothing. */
function decoded(value: string): string | null {
  try {
    return decodeURIComponent(value);
  } catch (error) {
    if (error instanceof URIError) return null;
    throw error;
  }
}

/**
 * The page answering `path` (under the console's root), with its decoded parameters; "malformed" when a parameter has
 * a malformed escape (a link cut short or mistyped).
 */
export function matchPage(
  path: string,
): { Page: ComponentType<PageProps>; params: Record<string, string> } | "malformed" | undefined {
  for (const { page, pattern } of PAGES) {
    const match = pattern.exec(path);
    if (!match) continue;
    const params = Object.entries(match.groups ?? {}).map(([name, value]) => [name, decoded(value)] as const);
    if (params.some(([, value]) => value === null)) return "malformed";
    return { Page: page.default, params: Object.fromEntries(params) as Record<string, string> };
  }
  return undefined;
}

/** The console's own path of the current URL ("/" at its root). */
const currentPath = () => `/${location.pathname.slice(CONSOLE_ROOT.length)}`;

/** Goes to a page of the console (`to`: its path, with a query if any) without reloading. */
export function navigate(to: string, { replace = false } = {}) {
  const url = CONSOLE_ROOT + to.replace(/^\//, "");
  if (replace) history.replaceState(null, "", url);
  else history.pushState(null, "", url);
  dispatchEvent(new PopStateEvent("popstate"));
}

/** The current path and query, re-read at every navigation. */
export function useLocation(): { path: string; query: URLSearchParams } {
  const [, setVersion] = useState(0);
  useEffect(() => {
    const changed = () => setVersion((version) => version + 1);
    addEventListener("popstate", changed);
    return () => removeEventListener("popstate", changed);
  }, []);
  return { path: currentPath(), query: new URLSearchParams(location.search) };
}

/** A link to a page of the console: a real href (opens in a new tab too), followed without reloading. */
export function Link({ to, children, class: className }: { to: string; children: ComponentChildren; class?: string }) {
  return (
    <a
      class={className}
      href={CONSOLE_ROOT + to.replace(/^\//, "")}
      onClick={(event) => {
        if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
        event.preventDefault();
        navigate(to);
      }}
    >
      {children}
    </a>
  );
}
