/**
 * The portal's one way to write HTML: a tagged template that escapes every interpolated value,
 * so text from a partner (a file name, a record number, an error message quoting its input) can
 * never become markup. Only what another `html` template produced is inserted as it is.
 */

/** Markup made by `html` (or `raw`): inserted into another template without escaping. */
export class SafeHtml {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

type Interpolated =
  | SafeHtml
  | string
  | number
  | boolean
  | null
  | undefined
  | readonly Interpolated[];

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Text as HTML text or a quoted attribute value. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => ESCAPES[char] ?? char);
}

function render(value: Interpolated): string {
  if (value instanceof SafeHtml) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  // `false`, null and undefined render nothing, so `${cond && html`…`}` reads naturally.
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: Interpolated[]): SafeHtml {
  let out = strings[0] ?? '';
  values.forEach((value, i) => {
    out += render(value) + (strings[i + 1] ?? '');
  });
  return new SafeHtml(out);
}

/** Markup this code wrote itself (never a partner's text): inserted as it is. */
export function raw(text: string): SafeHtml {
  return new SafeHtml(text);
}
