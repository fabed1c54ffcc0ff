#include "config/env_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

#include "config/secrets.h"

namespace pine::config {
namespace {

std::string trim(const std::string& s) {
  std::size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return {};
  std::size_t b = s.find_last_not_of(" \t\r");
  return s.substr(a, b - a + 1);
}

void wipe(std::string& s) {
  // Best effort: the buffer is overwritten before it returns to the allocator.
  volatile char* p = s.data();
  for (std::size_t i = 0; i < s.size(); ++i) p[i] = 0;
  s.clear();
}

}  // namespace

std::map<std::string, std::string> parseEnvText(const std::string& text, const std::string& file,
                                                std::vector<ConfigError>* errors) {
  std::map<std::string, std::string> out;
  std::map<std::string, int> firstLine;
  auto fail = [&](int line, int col, std::string key, std::string msg, std::string hint = {}) {
    if (errors) errors->push_back({file, line, col, std::move(key), std::move(msg), std::move(hint)});
  };
  std::istringstream in(text);
  std::string raw;
  int lineNo = 0;
  while (std::getline(in, raw)) {
    ++lineNo;
    if (!raw.empty() && raw.back() == '\r') raw.pop_back();
    std::size_t p = raw.find_first_not_of(" \t");
    if (p == std::string::npos || raw[p] == '#') continue;
    std::string line = raw.substr(p);
    int col0 = static_cast<int>(p) + 1;
    if (line.rfind("export ", 0) == 0) {
      std::size_t q = line.find_first_not_of(" \t", 7);
      if (q == std::string::npos) q = line.size();
      col0 += static_cast<int>(q);
      line = line.substr(q);
    }
    std::size_t eq = line.find('=');
    if (eq == std::string::npos) {
      fail(lineNo, col0, "", "expected NAME=VALUE", "write the secret as NAME=value, one per line");
      continue;
    }
    std::string name = trim(line.substr(0, eq));
    if (!isSecretName(name)) {
      // The name is echoed but the value never is: it may be the secret.
      fail(lineNo, col0, name, "'" + name.substr(0, 64) + "' is not a secret name",
           "names use A-Z, 0-9 and _, and do not start with a digit");
      continue;
    }
    std::string rest = line.substr(eq + 1);
    std::size_t v = rest.find_first_not_of(" \t");
    std::string value;
    bool ok = true;
    if (v != std::string::npos && (rest[v] == '\'' || rest[v] == '"')) {
      char quote = rest[v];
      std::size_t i = v + 1;
      bool closed = false;
      for (; i < rest.size(); ++i) {
        char c = rest[i];
        if (c == quote) {
          closed = true;
          ++i;
          break;
        }
        if (quote == '"' && c == '\\' && i + 1 < rest.size()) {
          char n = rest[++i];
          switch (n) {
            case 'n': value += '\n'; break;
            case 't': value += '\t'; break;
            case 'r': value += '\r'; break;
            default: value += n; break;  // \" \\ \$ and anything else: the character itself
          }
          continue;
        }
        value += c;
      }
      int valueCol = col0 + static_cast<int>(eq + 1 + v);
      if (!closed) {
        fail(lineNo, valueCol, name, "unterminated quoted value", "close the quote on the same line");
        ok = false;
      } else {
        std::string tail = trim(rest.substr(i));
        if (!tail.empty() && tail[0] != '#') {
          fail(lineNo, valueCol, name, "text after the closing quote", "quote the whole value");
          ok = false;
        }
      }
    } else {
      // Bare value: an inline comment needs a blank before '#', so "a#b" stays a value.
      std::size_t hash = std::string::npos;
      for (std::size_t i = 1; i < rest.size(); ++i)
        if (rest[i] == '#' && (rest[i - 1] == ' ' || rest[i - 1] == '\t')) {
          hash = i;
          break;
        }
      value = trim(rest.substr(0, hash));
    }
    wipe(rest);
    wipe(line);
    wipe(raw);
    if (!ok) {
      wipe(value);
      continue;
    }
    if (auto it = firstLine.find(name); it != firstLine.end()) {
      fail(lineNo, col0, name, "'" + name + "' is set twice (first on line " + std::to_string(it->second) + ")",
           "keep one");
      wipe(value);
      continue;
    }
    firstLine[name] = lineNo;
    out[name] = std::move(value);
  }
  return out;
}

std::map<std::string, std::string> parseEnvFile(const std::string& path, std::vector<ConfigError>* errors) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    if (errno != ENOENT && errors) errors->push_back({path, 0, 0, "", std::string("cannot read: ") + strerror(errno), ""});
    return {};
  }
  // Read straight into one string so no second copy of the values is left behind.
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto out = parseEnvText(text, path, errors);
  wipe(text);
  return out;
}

std::set<std::string> envFileNames(const std::string& path, std::vector<ConfigError>* errors,
                                   std::set<std::string>* shortOnes, std::size_t minBytes,
                                   std::set<std::string>* tinyOnes, std::size_t tinyBytes) {
  auto values = parseEnvFile(path, errors);
  std::set<std::string> names;
  for (auto& [k, v] : values) {
    names.insert(k);
    if (shortOnes && v.size() < minBytes) shortOnes->insert(k);
    if (tinyOnes && v.size() < tinyBytes) tinyOnes->insert(k);
    wipe(v);
  }
  return names;
}

}  // namespace pine::config
