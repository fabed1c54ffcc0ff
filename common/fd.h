// Small file-descriptor helpers shared by the processes.
#pragma once
#include <string>

namespace pine {

void setCloexec(int fd, bool on);
bool isCloexec(int fd);
// Close every descriptor >= lowest (close_range where the kernel has it; close_from_*.cpp, one
// per platform). Async-signal-safe.
void closeFrom(int lowest) noexcept;
// Read a whole small file; throws with the path on failure.
std::string readFile(const std::string& path);
// Write a file atomically: temp file in the same folder, fsync, rename, then fsync the folder.
void writeFileAtomic(const std::string& path, const std::string& content, unsigned mode);
// Write all bytes, retrying on EINTR and short writes. Returns false on error.
bool writeAll(int fd, const void* data, size_t len) noexcept;

}  // namespace pine
