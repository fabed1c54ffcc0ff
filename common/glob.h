// '*' globs over bytes, as pine's patterns write them: tool names and subjects in approval
// rules, taint lists and topics (broker/policy), protected names (sandbox/jail). A '*' is
// any run of bytes, newlines included; every other byte stands for itself.
#pragma once
#include <string_view>

namespace pine {

// True when all of `text` matches `pattern`. Only the last '*' seen is ever backtracked to,
// so the work is at most the pattern's length times the text's, never exponential.
bool globMatch(std::string_view pattern, std::string_view text);

}  // namespace pine
