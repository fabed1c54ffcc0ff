// Reading a tool's optional arguments, after the schema check (common/tool_table.h,
// checkArguments) has vouched for their types.
#include "worker/tools/tool_parts.h"

namespace pine::tools::detail {

std::string strArg(const Json& args, const char* key, std::string fallback) {
  auto it = args.find(key);
  return it == args.end() ? fallback : it->get<std::string>();
}

long long intArg(const Json& args, const char* key, long long fallback) {
  auto it = args.find(key);
  if (it == args.end()) return fallback;
  if (it->is_number_unsigned()) {
    auto u = it->get<unsigned long long>();
    return u > (1ULL << 62) ? (1LL << 62) : (long long)u;
  }
  return it->get<long long>();
}

bool boolArg(const Json& args, const char* key, bool fallback) {
  auto it = args.find(key);
  return it == args.end() ? fallback : it->get<bool>();
}

}  // namespace pine::tools::detail
