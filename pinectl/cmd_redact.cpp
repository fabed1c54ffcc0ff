// pinectl runs as the owner, who owns .env: it may read the values to redact them,
// and never prints one.
#include "pinectl/cmd_redact.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "common/home.h"
#include "redact/redactor.h"

namespace pine {
namespace {

std::string_view trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

// A missing file is fine (false, no error); an unreadable one is an error.
bool readFile(const std::string& path, std::string& out, std::string& error) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec) && !ec) return false;
  errno = 0;
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    error = path + ": " + (errno ? std::strerror(errno) : "cannot open");
    return false;
  }
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) {
    error = path + ": read failed";
    return false;
  }
  out = ss.str();
  return true;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> parseDotEnv(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  std::size_t pos = 0;
  const std::size_t n = text.size();
  auto nextLine = [&](std::size_t from) {
    const std::size_t nl = text.find('\n', from);
    return nl == std::string::npos ? n : nl;
  };
  while (pos < n) {
    std::size_t eol = nextLine(pos);
    std::string_view line = trim(std::string_view(text).substr(pos, eol - pos));
    std::size_t next = eol + 1;
    if (line.empty() || line.front() == '#') {
      pos = next;
      continue;
    }
    if (line.starts_with("export ")) line = trim(line.substr(7));
    const std::size_t eq = line.find('=');
    if (eq == std::string_view::npos) {
      pos = next;
      continue;
    }
    std::string key(trim(line.substr(0, eq)));
    std::string_view rest = trim(line.substr(eq + 1));
    std::string value;
    if (!rest.empty() && (rest.front() == '"' || rest.front() == '\'')) {
      const char q = rest.front();
      // The value may continue on the following lines until the closing quote.
      const std::size_t start = pos + (rest.data() - (text.data() + pos)) + 1;
      std::size_t i = start;
      bool closed = false;
      while (i < n) {
        const char c = text[i];
        if (c == q) {
          closed = true;
          break;
        }
        if (q == '"' && c == '\\' && i + 1 < n) {
          const char d = text[i + 1];
          value += d == 'n' ? '\n' : d == 't' ? '\t' : d == 'r' ? '\r' : d;
          i += 2;
          continue;
        }
        value += c;
        ++i;
      }
      if (!closed) value = std::string(rest.substr(1));  // unbalanced: take the line as written
      next = closed ? nextLine(i) + 1 : eol + 1;
    } else {
      const std::size_t hash = rest.find(" #");
      value = std::string(trim(hash == std::string_view::npos ? rest : rest.substr(0, hash)));
    }
    if (!key.empty()) out.emplace_back(std::move(key), std::move(value));
    pos = next;
  }
  return out;
}

std::optional<redact::Redactor> homeRedactor(const std::string& home, std::string& error, std::string& shortKeys) {
  const Home h{home};
  std::vector<std::string> known;
  std::string text;
  if (readFile(h.root + "/.env", text, error)) {
    for (auto& [key, value] : parseDotEnv(text)) {
      if (value.empty()) continue;
      if (value.size() < redact::kMinKnownLength) shortKeys += (shortKeys.empty() ? "" : ", ") + key;
      known.push_back(std::move(value));
    }
  }
  if (!error.empty()) return std::nullopt;
  if (readFile(h.token(), text, error)) {
    const std::string_view token = trim(text);
    if (!token.empty()) known.emplace_back(token);
  }
  if (!error.empty()) return std::nullopt;
  return redact::Redactor(std::move(known));
}

int cmdRedact(const std::string& home, std::istream& in, std::ostream& out) {
  std::string error, shortKeys;
  auto redactor = homeRedactor(home, error, shortKeys);
  if (!redactor) {
    std::cerr << "pinectl redact: cannot read " << error << "\n";
    return 1;
  }
  if (!shortKeys.empty()) {
    std::cerr << "pinectl redact: .env values shorter than " << redact::kMinKnownLength
              << " characters are redacted only where a pattern matches them: " << shortKeys << "\n";
  }
  redactor->redactStream(in, out);
  return out ? 0 : 1;
}

}  // namespace pine
