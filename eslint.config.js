import neostandard from 'neostandard'

// Prettier lays the code out (.prettierrc.json; `prettier --check` in npm run lint); neostandard's style rules
// are off (noStyle) so the two never disagree. What is left is about correctness.
export default [...neostandard({ ts: true, noStyle: true, ignores: ['dist/**', 'coverage/**', 'bench/.tmp/**'] })]
