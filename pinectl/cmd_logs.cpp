#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <iostream>

#include "common/home.h"
#include "pinectl/access_problem.h"
#include "pinectl/commands.h"

namespace pine {

std::string formatAuditLine(const std::string& line) {
  auto j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return "(not JSON) " + line;
  std::string out = j.value("ts", "?") + "  " + j.value("event", "?");
  out.resize(std::max<size_t>(out.size(), 44), ' ');
  out += j.value("role", "?") + "[" + std::to_string(j.value("pid", 0)) + "]";
  for (auto& [k, v] : j.items()) {
    if (k == "ts" || k == "event" || k == "role" || k == "pid") continue;
    out += "  " + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  }
  return out;
}

int cmdLogs(const std::string& home, bool follow, bool json) {
  std::string path = Home{home}.audit();
  std::ifstream in(path);
  if (!in && (!follow || errno == EACCES)) {
    std::cerr << "pinectl: cannot read the audit log: " << describeAccessProblem(home, path, errno) << "\n";
    return 1;
  }
  ino_t inode = 0;
  auto emit = [&](const std::string& line) {
    if (line.empty()) return;
    std::cout << (json ? line : formatAuditLine(line)) << "\n";
  };
  std::string line;
  for (;;) {
    if (in) {
      struct stat st;
      if (inode == 0 && stat(path.c_str(), &st) == 0) inode = st.st_ino;
      while (std::getline(in, line)) {
        if (in.eof()) {  // a line still being written: read it again when it is whole
          in.clear();
          in.seekg(-(std::streamoff)line.size(), std::ios::cur);
          break;
        }
        emit(line);
      }
      in.clear();
    }
    if (!follow) return 0;
    std::cout.flush();
    usleep(200 * 1000);
    struct stat st;
    if (stat(path.c_str(), &st) == 0 && (st.st_ino != inode || (in && st.st_size < (off_t)in.tellg()))) {
      in = std::ifstream(path);  // rotated or truncated: start on the new file
      inode = st.st_ino;
    }
  }
}

}  // namespace pine
