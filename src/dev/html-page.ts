// The development pages' one shape (the offline stand-in's Checkout page, the service's default
// Checkout return pages): plain HTML, no script, every value from outside escaped.

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);

/** `body` is HTML, its values already escaped; `title` is text. */
export function htmlPage(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head>
<body>
<h1>${escapeHtml(title)}</h1>
${body}
</body>
</html>
`;
}

/** A link only to an http(s) URL: a `javascript:` one given to the stand-in is shown, never followed. */
export function linkTo(url: string): string {
  return /^https?:\/\//i.test(url) ? `<a href="${escapeHtml(url)}">${escapeHtml(url)}</a>` : `<code>${escapeHtml(url)}</code>`;
}
