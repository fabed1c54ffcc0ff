// Descriptor-based file access inside one directory tree: every component opened with O_NOFOLLOW,
// so a link planted in the workspace is never followed out of it.
#pragma once
#include <string>
#include <vector>

namespace pine::checkpoint {

// "a/b/c" -> {"a","b","c"}; throws on "", "..", ".", an absolute path or an empty component.
std::vector<std::string> splitRelative(const std::string& path);

// An open descriptor of the folder holding `path` (its last component excluded), or -1 with why set
// when a component is missing (create false), is a link or is not a folder. With create, missing
// folders are made (mode 0755).
int openParent(int root, const std::string& path, bool create, std::string& why);

std::string readAll(int fd, size_t limit);
void writeAll(int fd, const std::string& bytes);
std::string sha256Hex(const std::string& bytes);

}  // namespace pine::checkpoint
