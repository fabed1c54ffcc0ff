#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <deque>
#include <optional>
#include <regex>
#include <fstream>
#include <iostream>

#include "common/home.h"
#include "common/log.h"
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

std::optional<std::string> sinceCutoff(const std::string& since, long long nowMs, std::string& why) {
  if (since.empty()) return std::string();
  static const std::regex relative(R"(([0-9]{1,6})([smhd]))");
  static const std::regex absolute(R"([0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9]{2}(:[0-9]{2}(:[0-9]{2})?)?)?)");
  std::smatch m;
  if (std::regex_match(since, m, relative)) {
    const long long unit = m[2] == "s" ? 1000 : m[2] == "m" ? 60000 : m[2] == "h" ? 3600000 : 86400000;
    return isoTime(nowMs - std::stoll(m[1]) * unit);
  }
  if (std::regex_match(since, absolute)) return since;  // a prefix of the log's own UTC form compares as text
  why = "--since " + since + ": write a time ago (90s, 10m, 2h, 3d) or a UTC time (2026-12-03, 2026-12-03T14:30)";
  return std::nullopt;
}

bool LogFilter::matches(const std::string& line) const {
  if (!grep.empty() && line.find(grep) == std::string::npos) return false;
  if (cutoff.empty() && event.empty() && agent.empty()) return true;
  auto j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return false;
  if (!cutoff.empty() && j.value("ts", "") < cutoff) return false;
  if (!event.empty()) {
    const std::string e = j.value("event", "");
    // "task" matches task.start and task.end; "task.end" only itself.
    if (e != event && e.rfind(event + ".", 0) != 0) return false;
  }
  if (!agent.empty() && j.value("agent", "") != agent) return false;
  return true;
}

int cmdLogs(const std::string& home, const LogsOptions& o, std::ostream& out, std::ostream& err) {
  std::string why;
  auto cutoff = sinceCutoff(o.since, nowMs(), why);
  if (!cutoff) {
    err << "pinectl: " << why << "\n";
    return 2;
  }
  LogFilter filter{*cutoff, o.event, o.agent, o.grep};
  std::string path = Home{home}.audit();
  std::ifstream in(path);
  if (!in && (!o.follow || errno == EACCES)) {
    err << "pinectl: cannot read the audit log: " << describeAccessProblem(home, path, errno) << "\n";
    return 1;
  }
  ino_t inode = 0;
  auto emit = [&](const std::string& line) {
    if (line.empty() || !filter.matches(line)) return;
    out << (o.json ? line : formatAuditLine(line)) << "\n";
  };
  // What is already there: every matching line, or the last -n of them (10 when following, as tail -f).
  const long last = o.lines >= 0 ? o.lines : (o.follow ? 10 : -1);
  std::deque<std::string> tail;
  bool caughtUp = false;
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
        if (caughtUp || last < 0) {
          emit(line);
        } else if (last > 0 && !line.empty() && filter.matches(line)) {
          tail.push_back(line);
          if ((long)tail.size() > last) tail.pop_front();
        }
      }
      in.clear();
    }
    if (!caughtUp) {
      for (auto& t : tail) emit(t);
      tail.clear();
      caughtUp = true;
    }
    if (!o.follow) return 0;
    out.flush();
    if (!out) return 0;  // its reader went away (`| head -1`): done
    usleep(200 * 1000);
    struct stat st;
    if (stat(path.c_str(), &st) == 0 && (st.st_ino != inode || (in && st.st_size < (off_t)in.tellg()))) {
      in = std::ifstream(path);  // rotated or truncated: start on the new file
      inode = st.st_ino;
    }
  }
}

}  // namespace pine
