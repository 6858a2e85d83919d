/**
 * Text that a checked repository wrote (file names, DOIs) or that a server answered, made safe to print
 * on a terminal or in a CI log, for every output format and note of `doi-proxy check`. Pure.
 *
 * A terminal obeys control characters (ESC and C1 start sequences that clear the screen, retitle the
 * window or write the clipboard), a log viewer breaks lines at U+2028/U+2029, bidirectional controls
 * make one file name look like another, and a GitHub Actions runner obeys `##[command]` anywhere in a
 * line (actions/runner ActionCommand.TryParse). Each of these characters is shown as a `\uXXXX` escape,
 * which in a JSON string means the same character again.
 */

// Control characters (C0, DEL, C1), line and paragraph separators, bidirectional controls, and the '['
// that would make '##[' a runner command.
// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]|(?<=##)\[/g

/** `s` with every character a terminal or CI runner would obey rather than show written as `\uXXXX`. */
export function visible(s: string): string {
  return s.replace(UNSAFE, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'))
}
