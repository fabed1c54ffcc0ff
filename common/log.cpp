#include "common/log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <spdlog/sinks/base_sink.h>
#include <unistd.h>

#include <chrono>
#include <mutex>
#include <vector>

#include "common/fd.h"
#include "common/outside_text.h"

namespace pine {
namespace {

std::function<std::string(std::string_view)> g_filter;
std::function<std::string(std::string_view)> g_auditFilter;

// A C1 control (U+0080..U+009F: U+009B is a CSI to terminals that read UTF-8) or a code point that
// shows as nothing or reorders the line (invisibleCodePoint), written as UTF-8 at i: its length,
// and the code point in *cp; 0 for anything else.
size_t hiddenAt(std::string_view t, size_t i, unsigned long* cp) {
  auto b = [&](size_t k) { return i + k < t.size() ? (unsigned char)t[i + k] : 0u; };
  const unsigned c = b(0);
  if (c == 0xC2 && b(1) >= 0x80 && b(1) <= 0x9F) {
    *cp = b(1);
    return 2;
  }
  if (c >= 0xC2 && c <= 0xDF && (b(1) & 0xC0) == 0x80) {
    *cp = ((c & 0x1Fu) << 6) | (b(1) & 0x3Fu);
    return invisibleCodePoint(*cp) ? 2 : 0;
  }
  if (c >= 0xE0 && c <= 0xEF && (b(1) & 0xC0) == 0x80 && (b(2) & 0xC0) == 0x80) {
    *cp = ((c & 0x0Fu) << 12) | ((b(1) & 0x3Fu) << 6) | (b(2) & 0x3Fu);
    return invisibleCodePoint(*cp) ? 3 : 0;
  }
  return 0;
}

// Control characters (but tab) as \n, \r or \xHH, C1 controls and invisible code points as \uHHHH
// (a log line is read on a terminal: outside text in it must not drive or reorder it); false, and
// nothing written, when there are none.
bool escapeControls(std::string_view text, std::string& out) {
  auto plain = [&](size_t i) {
    unsigned char c = (unsigned char)text[i];
    unsigned long cp;
    return !(c < 0x20 && c != '\t') && c != 0x7f && (c < 0x80 || hiddenAt(text, i, &cp) == 0);
  };
  size_t i = 0;
  while (i < text.size() && plain(i)) ++i;
  if (i == text.size()) return false;
  out.assign(text.substr(0, i));
  static const char hex[] = "0123456789abcdef";
  while (i < text.size()) {
    unsigned char c = (unsigned char)text[i];
    unsigned long cp = 0;
    size_t len = c >= 0x80 ? hiddenAt(text, i, &cp) : 0;
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if ((c < 0x20 && c != '\t') || c == 0x7f) {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else if (len > 0) {
      out += "\\u";
      for (int shift = 12; shift >= 0; shift -= 4) out += hex[(cp >> shift) & 15];
      i += len;
      continue;
    } else {
      out += (char)c;
    }
    ++i;
  }
  return true;
}

// A sink that writes each formatted line, filtered, with one write() on an
// O_APPEND fd, and can reopen its file (spdlog's own file sink buffers and
// cannot reopen). An empty path means stderr.
class AppendFileSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit AppendFileSink(std::string path, bool audit = false) : path_(std::move(path)), audit_(audit) { open(); }
  ~AppendFileSink() override {
    if (fd_ > 2) ::close(fd_);
  }
  void reopen() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (fd_ > 2) ::close(fd_);
    open();
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t buf;
    formatter_->format(msg, buf);
    if (fd_ < 0) return;
    const auto& filter = audit_ && g_auditFilter ? g_auditFilter : g_filter;
    std::string filtered;
    std::string_view line(buf.data(), buf.size());
    if (filter) line = filtered = filter(line);
    // One event a line: a message that carries outside text (a file's name, a server's answer)
    // must not start a line of its own or drive the terminal of whoever reads the log. After the
    // filter, which must see a secret that spans lines as it was.
    std::string escaped;
    if (!audit_ && !line.empty() && line.back() == '\n' && escapeControls(line.substr(0, line.size() - 1), escaped)) {
      escaped += '\n';
      line = escaped;
    }
    writeAll(fd_, line.data(), line.size());
  }
  void flush_() override {}

 private:
  void open() {
    fd_ = path_.empty() ? 2 : ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    // A log is as readable as its folder: pine's admin group reads data/logs (supervisor/admin_group.h).
    struct stat dir, file;
    auto slash = path_.find_last_of('/');
    if (fd_ > 2 && slash != std::string::npos && ::stat(path_.substr(0, slash).c_str(), &dir) == 0 &&
        (dir.st_mode & S_IRGRP) && ::fstat(fd_, &file) == 0 && !(file.st_mode & S_IRGRP) && file.st_uid == geteuid())
      ::fchmod(fd_, 0640);
  }
  std::string path_;
  bool audit_;  // lines are JSON documents
  int fd_ = -1;
};

std::string g_role = "pine";
std::vector<std::shared_ptr<AppendFileSink>> g_fileSinks;
std::shared_ptr<spdlog::logger> g_audit;

}  // namespace

long long nowMs() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

std::string isoTime(long long unixMs) {
  // Digits written by hand: this runs for every event answered and fed (strftime was about 2 %
  // of the broker's time under single events).
  long long ms = unixMs % 1000, s = unixMs / 1000;
  if (ms < 0) ms += 1000, s -= 1;  // before 1970: the second below, and its milliseconds
  time_t secs = (time_t)s;
  struct tm tm;
  if (!gmtime_r(&secs, &tm)) return "invalid time";
  if (tm.tm_year + 1900 < 0 || tm.tm_year + 1900 > 9999) {  // more than four digits: strftime's way
    char wide[64];
    size_t n = strftime(wide, sizeof wide, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(wide + n, sizeof wide - n, ".%03lldZ", ms);
    return wide;
  }
  char buf[24];
  auto put = [&buf](int at, int value, int digits) {
    for (int i = at + digits - 1; i >= at; --i, value /= 10) buf[i] = char('0' + value % 10);
  };
  put(0, tm.tm_year + 1900, 4);
  buf[4] = '-';
  put(5, tm.tm_mon + 1, 2);
  buf[7] = '-';
  put(8, tm.tm_mday, 2);
  buf[10] = 'T';
  put(11, tm.tm_hour, 2);
  buf[13] = ':';
  put(14, tm.tm_min, 2);
  buf[16] = ':';
  put(17, tm.tm_sec, 2);
  buf[19] = '.';
  put(20, int(ms), 3);
  buf[23] = 'Z';
  return std::string(buf, sizeof buf);
}

void setupLogging(const std::string& role, const std::string& file, bool alsoStderr) {
  g_role = role;
  std::vector<spdlog::sink_ptr> sinks;
  if (!file.empty()) {
    auto sink = std::make_shared<AppendFileSink>(file);
    g_fileSinks.push_back(sink);
    sinks.push_back(sink);
  }
  if (alsoStderr || file.empty()) sinks.push_back(std::make_shared<AppendFileSink>(""));
  auto logger = std::make_shared<spdlog::logger>(role, sinks.begin(), sinks.end());
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e%z [%n %P] %l: %v");
  logger->set_level(spdlog::level::info);
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(logger);
}

void setupAudit(const std::string& file) {
  auto sink = std::make_shared<AppendFileSink>(file, true);
  g_fileSinks.push_back(sink);
  g_audit = std::make_shared<spdlog::logger>("audit", sink);
  g_audit->set_pattern("%v");
  g_audit->flush_on(spdlog::level::trace);
}

void setLogFilter(std::function<std::string(std::string_view)> filter,
                  std::function<std::string(std::string_view)> auditFilter) {
  g_filter = std::move(filter);
  g_auditFilter = std::move(auditFilter);
}

void reopenLogs() {
  for (auto& sink : g_fileSinks) sink->reopen();
}

void audit(const std::string& event, nlohmann::json fields) {
  if (!g_audit) return;
  nlohmann::json line = nlohmann::json::object();
  line["ts"] = isoTime(nowMs());
  line["event"] = event;
  line["role"] = g_role;
  line["pid"] = (int)getpid();
  // A field never replaces what says which line this is: a clashing name is kept beside it.
  for (auto& [k, v] : fields.items()) line[line.contains(k) ? k + "_field" : k] = v;
  // Replace invalid UTF-8 rather than throw: a line is always written, and always valid JSON.
  g_audit->info(fmt::runtime("{}"), line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace pine
