#include "supervisor/program_file.h"

#include "common/fd.h"
#include "common/sha256_hex.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace pine {
namespace {

ProgramFile fileProblem(std::string why) {
  ProgramFile f;
  f.error = std::move(why);
  return f;
}

}  // namespace

std::string escapedHead(const std::string& bytes, int lines) {
  std::string out;
  size_t pos = 0;
  for (int n = 0; n < lines && pos < bytes.size(); ++n) {
    size_t end = bytes.find('\n', pos);
    std::string line = bytes.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    pos = end == std::string::npos ? bytes.size() : end + 1;
    bool cut = line.size() > 200;
    if (cut) line.resize(200);
    for (unsigned char c : line) {
      if (c >= 0x20 && c < 0x7f) {
        out += (char)c;
      } else {
        char buf[8];
        snprintf(buf, sizeof buf, "\\x%02x", c);
        out += buf;
      }
    }
    out += cut ? " [...]\n" : "\n";
  }
  if (pos < bytes.size()) out += "[...]\n";
  return out;
}

ProgramFile readProgramFile(const std::string& workspace, const std::string& path) {
  std::string rel = path;
  if (!rel.empty() && rel[0] == '/') {
    if (rel.rfind(workspace + "/", 0) != 0) return fileProblem("'" + path + "' is not inside your workspace " + workspace);
    rel = rel.substr(workspace.size() + 1);
  }
  std::vector<std::string> parts;
  for (size_t pos = 0; pos <= rel.size();) {
    size_t end = rel.find('/', pos);
    if (end == std::string::npos) end = rel.size();
    std::string part = rel.substr(pos, end - pos);
    if (part == "..") return fileProblem("'" + path + "' leaves your workspace (..)");
    if (!part.empty() && part != ".") parts.push_back(part);
    pos = end + 1;
  }
  if (parts.empty()) return fileProblem("name a file in your workspace");
  int dir = open(workspace.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return fileProblem("your workspace " + workspace + " cannot be opened: " + strerror(errno));
  // One component at a time, never following a symlink: what is read is what lies in the workspace.
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    int next = openat(dir, parts[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int e = errno;
    close(dir);
    if (next < 0)
      return fileProblem("'" + path + "': " + parts[i] + (e == ELOOP || e == ENOTDIR ? " is a symlink or not a folder" : ": " + std::string(strerror(e))));
    dir = next;
  }
  int fd = openat(dir, parts.back().c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  int e = errno;
  close(dir);
  if (fd < 0)
    return fileProblem("'" + path + "': " + (e == ELOOP ? std::string("is a symlink; name the file itself") : strerror(e)));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return fileProblem("'" + path + "' is not a regular file");
  }
  if ((uint64_t)st.st_size > kMaxProgramBytes) {
    close(fd);
    return fileProblem("'" + path + "' is larger than " + std::to_string(kMaxProgramBytes >> 20) + " MiB");
  }
  ProgramFile f;
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      e = errno;
      close(fd);
      return fileProblem("'" + path + "': " + strerror(e));
    }
    if (n == 0) break;
    f.content.append(buf, (size_t)n);
    if (f.content.size() > kMaxProgramBytes) {
      close(fd);
      return fileProblem("'" + path + "' grew beyond " + std::to_string(kMaxProgramBytes >> 20) + " MiB while read");
    }
  }
  close(fd);
  if (f.content.empty()) return fileProblem("'" + path + "' is empty");
  f.size = f.content.size();
  f.sha256 = sha256Hex(f.content);
  f.head = escapedHead(f.content, kProgramHeadLines);
  return f;
}

std::string installProgram(const std::string& home, const std::string& name, const std::string& sha256,
                           const std::string& content) {
  const std::string dir = home + "/source-types";
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    throw std::runtime_error("cannot create " + dir + ": " + strerror(errno));
  // Whatever pined's umask: the broker (another uid when pined is root) validates pine.yaml and
  // must see the file exists; the home's own mode keeps everyone else out.
  if (chmod(dir.c_str(), 0755) != 0) throw std::runtime_error("cannot chmod " + dir + ": " + strerror(errno));
  const std::string rel = "source-types/" + name + "-" + sha256.substr(0, 12);
  // Readable and runnable, writable by nobody: what the owner confirmed stays what runs.
  writeFileAtomic(home + "/" + rel, content, 0555);
  return rel;
}

}  // namespace pine
