#include "broker/policy/glob.h"

#include <re2/re2.h>

#include <string>

namespace pine::policy {

bool globMatch(std::string_view pattern, std::string_view text) {
  // Fast paths keep the common cases (exact names, a lone '*') off RE2.
  if (pattern.find('*') == std::string_view::npos) return pattern == text;
  if (pattern.find_first_not_of('*') == std::string_view::npos) return true;
  std::string re;
  size_t i = 0;
  while (i < pattern.size()) {
    size_t star = pattern.find('*', i);
    if (star == std::string_view::npos) star = pattern.size();
    if (star > i) re += RE2::QuoteMeta(re2::StringPiece(pattern.data() + i, star - i));
    if (star < pattern.size()) re += ".*";
    i = star + 1;
  }
  // Latin-1: bytes are matched as bytes, whatever the encoding of the text.
  RE2::Options opt;
  opt.set_encoding(RE2::Options::EncodingLatin1);
  opt.set_dot_nl(true);
  opt.set_log_errors(false);
  RE2 compiled(re, opt);
  if (!compiled.ok()) return false;  // fail closed: a pattern that cannot be compiled matches nothing
  return RE2::FullMatch(re2::StringPiece(text.data(), text.size()), compiled);
}

}  // namespace pine::policy
