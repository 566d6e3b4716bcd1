/** The one number format legacy CSV cells may use, parsed without a regex (hot: every numeric cell). */
/** `^-?\d+(\.\d+)?$` after trimming spaces and tabs, as a charCode loop; undefined when it does not match. */
export function parseNumber(text: string): number | undefined {
  let start = 0;
  let end = text.length;
  while (start < end && isSpace(text.charCodeAt(start))) start++;
  while (end > start && isSpace(text.charCodeAt(end - 1))) end--;
  let i = start;
  if (i < end && text.charCodeAt(i) === 45 /* - */) i++;
  const digits = i;
  while (i < end && isDigit(text.charCodeAt(i))) i++;
  if (i === digits) return undefined;
  if (i < end) {
    if (text.charCodeAt(i) !== 46 /* . */) return undefined;
    const fraction = ++i;
    while (i < end && isDigit(text.charCodeAt(i))) i++;
    if (i === fraction || i !== end) return undefined;
  }
  return Number(start === 0 && end === text.length ? text : text.slice(start, end));
}

const isSpace = (c: number): boolean => c === 32 || c === 9;
const isDigit = (c: number): boolean => c >= 48 && c <= 57;
