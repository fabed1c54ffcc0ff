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

// Passes the redacted text on line by line; a line that is a JSON object or array (a JSON log
// line, an API answer) is also redacted with its strings decoded, as pine-egress and pine-mqtt
// read JSON: a value written in \u escapes is found there too.
class JsonLines final : public std::streambuf {
 public:
  JsonLines(std::ostream& out, const redact::Redactor& redactor) : out_(out), redactor_(redactor) {}
  void finish() {
    emit(true);
    out_.flush();
  }

 protected:
  int overflow(int c) override {
    if (c == traits_type::eof()) return traits_type::not_eof(c);
    line_ += static_cast<char>(c);
    // A line without an end holds no more than this: past it, what came is passed on as the
    // stream redactor left it, and the JSON reading skips that line.
    if (c == '\n' || line_.size() >= kMaxJsonLine) emit();
    return c;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    for (std::streamsize i = 0; i < n; ++i) overflow(static_cast<unsigned char>(s[i]));
    return n;
  }
  int sync() override {
    out_.flush();  // whole lines only: a partial one waits for its end
    return out_ ? 0 : -1;
  }

 private:
  static constexpr std::size_t kMaxJsonLine = 1 << 20;
  void emit(bool atEnd = false) {
    if (line_.empty()) return;
    const bool ended = line_.back() == '\n' || atEnd;
    const bool whole = ended && !partial_;
    partial_ = !ended;
    const std::size_t first = line_.find_first_not_of(" \t");
    if (whole && first != std::string::npos && (line_[first] == '{' || line_[first] == '[')) {
      const bool nl = line_.back() == '\n';
      std::string json = redactor_.redact(std::string_view(line_).substr(0, line_.size() - (nl ? 1 : 0)),
                                          redact::Format::kJson);
      line_ = json + (nl ? "\n" : "");
    }
    out_ << line_;
    line_.clear();
  }
  std::ostream& out_;
  const redact::Redactor& redactor_;
  std::string line_;
  bool partial_ = false;  // the line being passed on was cut at kMaxJsonLine
};

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
  JsonLines lines(out, *redactor);
  std::ostream jsonAware(&lines);
  redactor->redactStream(in, jsonAware);
  lines.finish();
  return out ? 0 : 1;
}

}  // namespace pine
