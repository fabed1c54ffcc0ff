#include "supervisor/secrets/secret_store.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "config/env_file.h"
#include "config/secrets.h"
#include "supervisor/secrets/config_writer.h"

namespace pine::secrets {
namespace {

void wipe(std::string& s) {
  OPENSSL_cleanse(s.data(), s.size());
  s.clear();
}

// Wipes a string on scope exit (temporary copies of .env text and values).
struct Wiped {
  std::string s;
  ~Wiped() { wipe(s); }
};

struct Closer {
  int fd;
  ~Closer() {
    if (fd >= 0) ::close(fd);
  }
};

std::string dirOf(const std::string& path) {
  auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string baseOf(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

// Reads all of fd into out (which the caller wipes).
bool readAll(int fd, std::string& out) {
  char buf[4096];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      OPENSSL_cleanse(buf, sizeof buf);
      return false;
    }
    if (n == 0) break;
    out.append(buf, (std::size_t)n);
  }
  OPENSSL_cleanse(buf, sizeof buf);
  return true;
}

// The NAME a .env line sets, by the same rules as config::parseEnvText (blank
// lines and '#' comments set none; "export " is skipped), or empty.
std::string lineName(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  std::size_t p = line.find_first_not_of(" \t");
  if (p == std::string_view::npos || line[p] == '#') return {};
  line.remove_prefix(p);
  if (line.starts_with("export ")) {
    std::size_t q = line.find_first_not_of(" \t", 7);
    line.remove_prefix(q == std::string_view::npos ? line.size() : q);
  }
  std::size_t eq = line.find('=');
  if (eq == std::string_view::npos) return {};
  std::string_view name = line.substr(0, eq);
  std::size_t a = name.find_first_not_of(" \t");
  if (a == std::string_view::npos) return {};
  std::size_t b = name.find_last_not_of(" \t");
  return std::string(name.substr(a, b - a + 1));
}

bool bareSafe(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
         std::strchr("_-./:+@%,=~", c) != nullptr;
}

// The value as .env text that both readers (config::parseEnvText and pinectl's
// parseDotEnv) give back byte for byte, and that a shell sourcing the file
// would not expand: bare when plain, 'single-quoted' when that needs no escape,
// else "double-quoted" with \\ \" \n \r \t \$ \` escapes, all on one line.
void encodeValue(const std::string& v, std::string& out) {
  bool bare = true, single = true;
  for (char c : v) {
    if (!bareSafe(c)) bare = false;
    if (c == '\'' || c == '\n' || c == '\r') single = false;
  }
  if (bare) {
    out += v;
    return;
  }
  if (single) {
    out += '\'';
    out += v;
    out += '\'';
    return;
  }
  out += '"';
  for (char c : v) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '$': out += "\\$"; break;
      case '`': out += "\\`"; break;
      default: out += c;
    }
  }
  out += '"';
}

void checkName(const std::string& name) {
  // The name is not echoed: a caller that swapped name and value would leak the value.
  if (!config::isSecretName(name))
    throw std::runtime_error("invalid secret name (A-Z, 0-9 and _, not starting with a digit, at most 128 bytes)");
}

}  // namespace

SecretStore::SecretStore(std::string envPath) : envPath_(std::move(envPath)) {}

SecretStore::~SecretStore() {
  for (auto& [k, v] : values_) wipe(v);
}

std::vector<std::string> SecretStore::load() {
  std::vector<std::string> errors;
  // O_NONBLOCK: a FIFO planted at .env must not hang the supervisor.
  int fd = ::open(envPath_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& [k, v] : values_) wipe(v);
      values_.clear();
      return {};
    }
    return {envPath_ + ":0: cannot read: " + strerror(errno)};
  }
  Closer closer{fd};
  struct stat st;
  if (fstat(fd, &st) != 0) return {envPath_ + ":0: cannot read: " + strerror(errno)};
  if (!S_ISREG(st.st_mode)) return {envPath_ + ":0: is not a regular file"};
  Wiped text;
  // Room for the whole file up front, so no reallocation leaves an unwiped copy behind.
  text.s.reserve((std::size_t)st.st_size + 1);
  if (!readAll(fd, text.s)) return {envPath_ + ":0: cannot read: " + strerror(errno)};

  std::vector<config::ConfigError> errs;
  auto parsed = config::parseEnvText(text.s, envPath_, &errs);
  if (!errs.empty()) {
    for (auto& [k, v] : parsed) wipe(v);
    // parseEnvText's messages carry names and positions, never values.
    for (auto& e : errs) errors.push_back(e.format());
    return errors;
  }
  std::map<std::string, std::string, std::less<>> next;
  for (auto& [k, v] : parsed) {
    if (v.empty()) continue;  // an empty value is no secret: nothing to inject, verify or redact
    next.emplace(k, std::move(v));
    wipe(v);
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [k, v] : values_) wipe(v);
  values_.swap(next);
  return {};
}

std::optional<std::string> SecretStore::get(std::string_view name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> SecretStore::names() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (auto& [k, v] : values_) out.push_back(k);
  return out;
}

std::vector<std::string> SecretStore::values() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (auto& [k, v] : values_)
    if (!v.empty()) out.push_back(v);
  return out;
}

bool SecretStore::rewrite(const std::string& name, const std::string& line, bool appendIfMissing) {
  const std::string dir = dirOf(envPath_), base = baseOf(envPath_);
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) throw std::runtime_error("cannot open " + dir + ": " + strerror(errno));
  Closer dirCloser{dfd};

  Wiped old;
  struct stat st;
  if (fstatat(dfd, base.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    // Replacing a link would silently detach it from the file it names; writing
    // through it would write wherever it points. Neither is ours to decide.
    if (S_ISLNK(st.st_mode)) throw std::runtime_error(envPath_ + " is a symbolic link; refused");
    if (!S_ISREG(st.st_mode)) throw std::runtime_error(envPath_ + " is not a regular file; refused");
    if (st.st_uid != geteuid()) throw std::runtime_error(envPath_ + " is not owned by pined's user; refused");
    int fd = openat(dfd, base.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) throw std::runtime_error("cannot read " + envPath_ + ": " + strerror(errno));
    Closer closer{fd};
    struct stat st2;
    if (fstat(fd, &st2) != 0 || st2.st_dev != st.st_dev || st2.st_ino != st.st_ino || !S_ISREG(st2.st_mode))
      throw std::runtime_error(envPath_ + " changed while being read; refused");
    old.s.reserve((std::size_t)st2.st_size + 1);
    if (!readAll(fd, old.s)) throw std::runtime_error("cannot read " + envPath_ + ": " + strerror(errno));
  } else if (errno != ENOENT) {
    throw std::runtime_error("cannot read " + envPath_ + ": " + strerror(errno));
  }

  // Line by line, as parseEnvText reads it; every line that is not NAME's is copied as is.
  Wiped out;
  out.s.reserve(old.s.size() + line.size() + 16);  // "export ", CR, newlines: no regrowth
  bool found = false;
  std::size_t pos = 0;
  while (pos < old.s.size()) {
    std::size_t nl = old.s.find('\n', pos);
    std::size_t end = nl == std::string::npos ? old.s.size() : nl + 1;
    std::string_view raw(old.s.data() + pos, end - pos);
    std::string_view body = raw;
    if (body.ends_with('\n')) body.remove_suffix(1);
    if (lineName(body) == name) {
      if (!found && !line.empty()) {
        // Keep the line's indentation, "export " and line ending; only the assignment changes.
        std::size_t p = body.find_first_not_of(" \t");
        std::string_view lead = body.substr(0, p);
        out.s.append(lead);
        if (body.substr(p).starts_with("export ")) out.s += "export ";
        out.s += line;
        if (body.ends_with('\r')) out.s += '\r';
        if (raw.ends_with('\n')) out.s += '\n';
      }
      found = true;
    } else {
      out.s.append(raw);
    }
    pos = end;
  }
  if (!found && appendIfMissing) {
    if (!out.s.empty() && out.s.back() != '\n') out.s += '\n';
    out.s += line;
    out.s += '\n';
  }
  if (!found && !appendIfMissing) return false;
  writeFileAtomicAt(dfd, base, out.s, 0600);
  return found;
}

void SecretStore::set(const std::string& name, const std::string& value) {
  checkName(name);
  if (value.empty()) throw std::runtime_error("empty value for " + name + " (use unset to remove a secret)");
  if (value.size() > kMaxSecretValue)
    throw std::runtime_error("value of " + name + " is too long (at most " + std::to_string(kMaxSecretValue) +
                             " bytes)");
  if (value.find('\0') != std::string::npos) throw std::runtime_error("value of " + name + " contains a NUL byte");

  Wiped line;
  line.s = name + "=";
  encodeValue(value, line.s);
  rewrite(name, line.s, true);

  std::lock_guard<std::mutex> lock(mu_);
  auto it = values_.find(name);
  if (it != values_.end()) {
    wipe(it->second);
    it->second = value;
  } else {
    values_.emplace(name, value);
  }
}

void SecretStore::unset(const std::string& name) {
  checkName(name);
  if (!rewrite(name, {}, false)) throw std::runtime_error(name + " is not in " + envPath_);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = values_.find(name);
  if (it != values_.end()) {
    wipe(it->second);
    values_.erase(it);
  }
}

}  // namespace pine::secrets
