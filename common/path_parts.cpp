#include "common/path_parts.h"

namespace pine {

std::vector<std::string> splitPath(std::string_view path, bool dropEmpty) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t slash = path.find('/', start);
    std::string_view part = path.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (!part.empty() || !dropEmpty) parts.emplace_back(part);
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return parts;
}

}  // namespace pine
