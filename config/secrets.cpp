#include "config/secrets.h"

#include <cctype>

namespace pine::config {
namespace {

bool startsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

bool isTokenChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '+' || c == '/' || c == '=' ||
         c == '.';
}

std::string foldKey(std::string_view s) {
  std::string out;
  for (char c : s)
    if (c != '_' && c != '-') out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool endsWith(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

}  // namespace

bool isSecretName(std::string_view s) {
  if (s.empty() || s.size() > 128) return false;
  if (!(std::isupper(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isupper(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '_'))
      return false;
  return true;
}

bool looksLikeSecret(std::string_view s) {
  if (s.find("-----BEGIN") != std::string_view::npos && s.find("PRIVATE KEY") != std::string_view::npos) return true;
  // A word inside a longer text is checked on its own: "Bearer sk-..." must still be caught.
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && !isTokenChar(s[i])) ++i;
    std::size_t j = i;
    while (j < s.size() && isTokenChar(s[j])) ++j;
    std::string_view w = s.substr(i, j - i);
    i = j;
    if (w.size() < 16) continue;
    static const std::string_view prefixes[] = {"sk-", "sk_live_", "sk_test_", "rk_live_", "ghp_", "gho_", "ghs_",
                                                "ghu_", "github_pat_", "glpat-", "xoxb-", "xoxp-", "xapp-",
                                                "AKIA", "ASIA", "AIza", "hf_", "eyJ", "npm_", "pypi-"};
    for (auto p : prefixes)
      if (startsWith(w, p)) return true;
    // Random keys are long unbroken runs mixing upper case, lower case and
    // digits; model ids and names are hyphenated words ("Qwen2-VL-72B-Instruct").
    std::size_t a = 0;
    while (a < w.size()) {
      std::size_t b = a;
      while (b < w.size() && w[b] != '-' && w[b] != '_' && w[b] != '.' && w[b] != '/') ++b;
      std::string_view seg = w.substr(a, b - a);
      if (seg.size() >= 20) {
        bool upper = false, lower = false, digit = false;
        for (char c : seg) {
          if (std::isupper(static_cast<unsigned char>(c))) upper = true;
          else if (std::islower(static_cast<unsigned char>(c))) lower = true;
          else if (std::isdigit(static_cast<unsigned char>(c))) digit = true;
        }
        if (upper && lower && digit) return true;
      }
      a = b + 1;
    }
  }
  // Telegram bot tokens split on ':' above, so look for the whole shape here.
  for (std::size_t k = 0; k < s.size(); ++k) {
    if (s[k] != ':') continue;
    std::size_t a = k;
    while (a > 0 && std::isdigit(static_cast<unsigned char>(s[a - 1]))) --a;
    std::size_t b = k + 1;
    while (b < s.size() && (std::isalnum(static_cast<unsigned char>(s[b])) || s[b] == '_' || s[b] == '-')) ++b;
    if (k - a >= 6 && b - k - 1 >= 30) return true;
  }
  return false;
}

bool isCredentialKey(std::string_view key) {
  std::string k = foldKey(key);
  static const std::string_view tails[] = {"apikey", "token", "password", "passwd", "authorization", "privatekey",
                                           "clientsecret", "credentials", "accesskey", "secretkey", "bearer"};
  for (auto t : tails)
    if (endsWith(k, t)) return true;
  return false;
}

std::vector<SecretRef> findSecretRefs(std::string_view text, std::vector<std::string>* problems) {
  std::vector<SecretRef> out;
  static constexpr std::string_view open = "${secret:";
  std::size_t pos = 0;
  while ((pos = text.find(open, pos)) != std::string_view::npos) {
    std::size_t end = text.find('}', pos);
    if (end == std::string_view::npos) {
      if (problems) problems->push_back("unterminated ${secret:...}");
      break;
    }
    std::string name(text.substr(pos + open.size(), end - pos - open.size()));
    if (!isSecretName(name)) {
      if (problems)
        problems->push_back("'" + std::string(text.substr(pos, end - pos + 1)) +
                            "' does not name a secret (names are like OPENAI_KEY: A-Z, 0-9, _)");
    } else {
      out.push_back({name, pos});
    }
    pos = end + 1;
  }
  return out;
}

bool containsSecretRef(std::string_view text) { return text.find("${secret:") != std::string_view::npos; }

std::string suggestSecretName(std::string_view keyPath) {
  std::string out;
  bool lastUnderscore = true;
  auto push = [&](char c) {
    if (c == '_') {
      if (!lastUnderscore) out += '_';
      lastUnderscore = true;
    } else {
      out += c;
      lastUnderscore = false;
    }
  };
  // Drop the file-level sections that say nothing about what the secret is for.
  std::string_view p = keyPath;
  for (std::string_view skip : {"providers.", "mcpServers.", "sources."})
    if (startsWith(p, skip)) p.remove_prefix(skip.size());
  char prev = 0;
  bool inIndex = false;
  for (char c : p) {
    // "sources[2].tokenSecret": the index says nothing about the secret.
    if (c == '[') inIndex = true;
    if (inIndex) {
      if (c == ']') inIndex = false;
      continue;
    }
    if (std::isupper(static_cast<unsigned char>(c)) && std::islower(static_cast<unsigned char>(prev))) push('_');
    if (std::isalnum(static_cast<unsigned char>(c)))
      push(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
    else
      push('_');
    prev = c;
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "SECRET_" + out;
  return out;
}

}  // namespace pine::config
