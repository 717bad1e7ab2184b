/*
 * Tables keep their column labels on a narrow screen: there the stylesheet stacks each row's cells and shows each
 * cell's `data-label` before it. The labels are the column headers' text, set here on every table.list's cells as the
 * pages draw them, so that no page writes them twice.
 */

function labelCells(root: ParentNode) {
  for (const table of root.querySelectorAll("table.list")) {
    const headers = [...table.querySelectorAll("thead th")].map((header) => header.textContent?.trim() ?? "");
    for (const row of table.querySelectorAll("tbody tr"))
      for (const [index, cell] of [...row.children].entries()) {
        const label = headers[index];
        if (label && cell.getAttribute("data-label") !== label) cell.setAttribute("data-label", label);
      }
  }
}

/** Labels the cells of every table under `root`, now and whenever its content changes. */
export function labelTableCells(root: HTMLElement) {
  labelCells(root);
  new MutationObserver(() => labelCells(root)).observe(root, { childList: true, subtree: true });
}
