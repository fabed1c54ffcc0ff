// How the bash guard compares a file name with a protected one (.ssh, .env,
// .git/hooks, AGENTS.md, Library/Keychains, ...). macOS file systems are
// case-insensitive by default, and the path jail (sandbox/jail/name_rules)
// compares after NFKC normalisation, case folding and removal of default
// ignorable code points. The guard depends on the standard library only, so it
// folds locally: ASCII case, and every code point whose NFKC + case fold
// becomes ASCII letters, digits or . - _ (fullwidth forms, mathematical
// alphanumerics, circled and super/subscript letters and digits, ligatures,
// the Kelvin sign, long s, dot leaders); ignorables are dropped. Other
// non-ASCII text is kept as it is: it cannot equal an ASCII protected name.
#pragma once
#include <string>
#include <string_view>

namespace pine::guard {

std::string foldName(std::string_view name);

}  // namespace pine::guard
