import { describe, expect, it } from 'vitest'
import { visible } from '../../../src/command/check/visible.js'

describe('visible: attacker-written text as a terminal or CI log shows it, never obeys it', () => {
  it.each([
    ['docs/index.md', 'docs/index.md', 'plain text is unchanged'],
    ['10.1000/a b(c)%[x]é', '10.1000/a b(c)%[x]é', 'spaces, punctuation, brackets and letters stay'],
    ['nl\n::warning file=a::INJECTED\n.md', 'nl\\u000a::warning file=a::INJECTED\\u000a.md', 'a newline cannot start a line of its own'],
    ['a\rb', 'a\\u000db', 'nor a carriage return'],
    ['\x1b[2J\x1bc', '\\u001b[2J\\u001bc', 'ESC: clear the screen, reset the terminal'],
    ['\x1b]52;c;cHduZWQ=\x07', '\\u001b]52;c;cHduZWQ=\\u0007', 'OSC 52 writes the clipboard'],
    ['\u009b2J\u009d0;title\u009c', '\\u009b2J\\u009d0;title\\u009c', 'C1: CSI, OSC and ST in one character each'],
    ['\x00\x7f', '\\u0000\\u007f', 'NUL and DEL'],
    ['a\u2028b\u2029c', 'a\\u2028b\\u2029c', 'line and paragraph separators'],
    ['evil\u202egnp.md', 'evil\\u202egnp.md', 'a bidirectional override cannot disguise a name'],
    ['x ##[add-mask]secret', 'x ##\\u005badd-mask]secret', 'a runner obeys ##[command] anywhere in a line'],
    ['#[ and # [ and ##', '#[ and # [ and ##', 'only ##[ is a command']
  ])('%j → %j (%s)', (text, shown) => {
    expect(visible(text)).toBe(shown)
  })

  it('writes what JSON reads back as the same string', () => {
    const text = 'a\x1b\u009b\u2028##[b\n'
    expect(JSON.parse(`"${visible(text)}"`)).toBe(text)
  })
})
