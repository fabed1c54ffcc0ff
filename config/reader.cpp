#include "config/reader.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "config/secrets.h"
#include "config/yaml_load.h"

namespace pine::config::detail {

void Ctx::error(Pos p, const std::string& keyPath, std::string message, std::string hint) {
  if (errors) addError(*errors, {file, p.line, p.column, keyPath, std::move(message), std::move(hint)});
}

void Ctx::ref(Ref::Kind k, const std::string& name, Pos p, const std::string& keyPath) {
  if (refs) refs->push_back({k, name, file, p, keyPath});
}

Pos posOf(const YAML::Node& n, Pos fallback) {
  if (!n.IsDefined()) return fallback;
  YAML::Mark m = n.Mark();
  if (m.line < 0 || m.column < 0) return fallback;
  return {m.line + 1, m.column + 1};
}

bool isPlain(const YAML::Node& n) { return n.Tag() == "?"; }

std::string describe(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "nothing";
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a map";
  const std::string& s = n.Scalar();
  // An error message must not become the place a pasted key is printed.
  if (looksLikeSecret(s)) return "a value that looks like a secret";
  std::string shown = s.size() > 40 ? s.substr(0, 40) + "..." : s;
  for (char& c : shown)
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  return (isPlain(n) ? "'" : "the string '") + shown + "'";
}

std::optional<YAML::Node> parseDocument(Ctx& ctx, const std::string& text) {
  const bool json = ctx.file.size() >= 5 && ctx.file.compare(ctx.file.size() - 5, 5, ".json") == 0;
  YAML::Node root;
  try {
    // pine's files nest a few levels; 64 is far past any of them.
    root = loadYaml(text, {.maxBytes = 1u << 20, .maxDepth = 64, .maxNodes = 100000});
  } catch (const YamlError& e) {
    // yaml-cpp's own words keep their prefix; pine's checks say what they found.
    const std::string prefix = e.kind != YamlError::Syntax ? "" : json ? "malformed JSON: " : "malformed YAML: ";
    ctx.error({e.line, e.column}, "", prefix + e.message, e.hint);
    return std::nullopt;
  }
  if (root.IsNull()) return YAML::Node(YAML::NodeType::Map);
  if (!root.IsMap()) {
    ctx.error(posOf(root, {1, 1}), "", "expected a map of keys at the top of the file, got " + describe(root));
    return std::nullopt;
  }
  return root;
}

namespace {

std::string foldKey(const std::string& s) {
  std::string out;
  for (char c : s)
    if (c != '_' && c != '-') out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

void scan(Ctx& ctx, const YAML::Node& n, const std::string& path, const std::string& parentKey, Pos fallback) {
  if (n.IsMap()) {
    for (auto it = n.begin(); it != n.end(); ++it) {
      if (!it->first.IsScalar()) continue;
      const std::string k = it->first.Scalar();
      scan(ctx, it->second, path.empty() ? k : path + "." + k, k, posOf(it->first, fallback));
    }
    return;
  }
  if (n.IsSequence()) {
    std::size_t i = 0;
    for (auto it = n.begin(); it != n.end(); ++it, ++i)
      scan(ctx, *it, path + "[" + std::to_string(i) + "]", parentKey, fallback);
    return;
  }
  if (!n.IsScalar()) return;
  const std::string& v = n.Scalar();
  if (v.empty() || containsSecretRef(v)) return;  // placeholders are checked where they are read
  const std::string fk = foldKey(parentKey);
  const bool nameKey = fk.size() >= 6 && fk.compare(fk.size() - 6, 6, "secret") == 0;
  bool literal = false;
  if (nameKey) {
    // keySecret, tokenSecret, secret: these take a NAME. A value here is pasted by mistake.
    literal = !isSecretName(v) && (looksLikeSecret(v) || v.size() >= 16);
  } else if (isCredentialKey(parentKey)) {
    literal = true;
  } else {
    literal = looksLikeSecret(v);
  }
  if (!literal) return;
  Pos p = posOf(n, fallback);
  ctx.flagged.insert({p.line, p.column});
  std::string name = suggestSecretName(path);
  ctx.error(p, path, "this looks like a secret's value; configuration names secrets and never holds them",
            "store it with `pinectl secret set " + name + "` and write " +
                (nameKey ? parentKey + ": " + name : "${secret:" + name + "}") + " in its place");
}

bool parseInt(const std::string& s, std::int64_t& out) {
  if (s.empty()) return false;
  const char* b = s.data();
  const char* e = s.data() + s.size();
  if (*b == '+') ++b;
  auto r = std::from_chars(b, e, out);
  return r.ec == std::errc() && r.ptr == e;
}

bool hasControlChars(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](char c) {
    unsigned char u = static_cast<unsigned char>(c);
    return (u < 0x20 && c != '\n' && c != '\t') || u == 0x7f;
  });
}

}  // namespace

void scanLiteralSecrets(Ctx& ctx, const YAML::Node& root) { scan(ctx, root, "", "", {1, 1}); }

std::optional<std::string> readString(Ctx& ctx, const YAML::Node& n, Pos fb, const std::string& path, StrRule rule) {
  Pos p = posOf(n, fb);
  if (ctx.isFlagged(p)) return std::nullopt;
  if (!n.IsScalar()) {
    ctx.error(p, path, "expected a string, got " + describe(n));
    return std::nullopt;
  }
  const std::string& s = n.Scalar();
  if (rule.nonEmpty && s.empty()) {
    ctx.error(p, path, "must not be empty");
    return std::nullopt;
  }
  if (s.size() > rule.maxLen) {
    ctx.error(p, path, "is longer than " + std::to_string(rule.maxLen) + " bytes");
    return std::nullopt;
  }
  if (hasControlChars(s)) {
    ctx.error(p, path, "contains control characters");
    return std::nullopt;
  }
  if (containsSecretRef(s)) {
    if (!rule.secretRefs) {
      ctx.error(p, path, "a ${secret:...} placeholder is not allowed here",
                "placeholders go in a provider's apiKey, MCP servers' env and headers, and program sources' options");
      return std::nullopt;
    }
    std::vector<std::string> problems;
    auto refs = findSecretRefs(s, &problems);
    for (auto& pr : problems) ctx.error(p, path, pr);
    if (!problems.empty()) return std::nullopt;
    for (auto& r : refs) ctx.ref(Ref::Secret, r.name, p, path);
  }
  return s;
}

std::optional<bool> readBool(Ctx& ctx, const YAML::Node& n, Pos fb, const std::string& path) {
  Pos p = posOf(n, fb);
  if (ctx.isFlagged(p)) return std::nullopt;
  if (n.IsScalar() && isPlain(n)) {
    const std::string& s = n.Scalar();
    if (s == "true" || s == "True" || s == "TRUE") return true;
    if (s == "false" || s == "False" || s == "FALSE") return false;
  }
  // yes/no/on/off are refused on purpose: YAML 1.1 reads them as booleans, JSON does not.
  ctx.error(p, path, "expected true or false, got " + describe(n));
  return std::nullopt;
}

std::optional<std::int64_t> readInt(Ctx& ctx, const YAML::Node& n, Pos fb, const std::string& path, std::int64_t min,
                                    std::int64_t max) {
  Pos p = posOf(n, fb);
  if (ctx.isFlagged(p)) return std::nullopt;
  const std::string range = "an integer from " + std::to_string(min) + " to " + std::to_string(max);
  std::int64_t v = 0;
  if (!n.IsScalar() || !isPlain(n) || !parseInt(n.Scalar(), v)) {
    ctx.error(p, path, "expected " + range + ", got " + describe(n));
    return std::nullopt;
  }
  if (v < min || v > max) {
    ctx.error(p, path, std::to_string(v) + " is out of range: expected " + range);
    return std::nullopt;
  }
  return v;
}

std::optional<double> readNumber(Ctx& ctx, const YAML::Node& n, Pos fb, const std::string& path, double min,
                                 double max) {
  Pos p = posOf(n, fb);
  if (ctx.isFlagged(p)) return std::nullopt;
  auto fmt = [](double d) {
    std::string s = std::to_string(d);
    while (s.size() > 1 && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
  };
  const std::string range = "a number from " + fmt(min) + " to " + fmt(max);
  if (n.IsScalar() && isPlain(n) && !n.Scalar().empty()) {
    const std::string& s = n.Scalar();
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (end == s.c_str() + s.size() && std::isfinite(v)) {
      if (v < min || v > max) {
        ctx.error(p, path, s + " is out of range: expected " + range);
        return std::nullopt;
      }
      return v;
    }
  }
  ctx.error(p, path, "expected " + range + ", got " + describe(n));
  return std::nullopt;
}

std::optional<std::string> readEnumText(Ctx& ctx, const YAML::Node& n, Pos fb, const std::string& path,
                                        const std::vector<std::string>& allowed) {
  Pos p = posOf(n, fb);
  if (ctx.isFlagged(p)) return std::nullopt;
  std::string list;
  for (std::size_t i = 0; i < allowed.size(); ++i)
    list += (i == 0 ? "" : i + 1 == allowed.size() ? " or " : ", ") + allowed[i];
  if (n.IsScalar() && std::find(allowed.begin(), allowed.end(), n.Scalar()) != allowed.end()) return n.Scalar();
  ctx.error(p, path, "expected " + list + ", got " + describe(n), n.IsScalar() ? didYouMean(n.Scalar(), allowed) : "");
  return std::nullopt;
}

// ---- Map -------------------------------------------------------------------------------

Map::Map(Ctx& ctx, const YAML::Node& node, std::string path, std::string schema, Pos pos)
    : ctx_(ctx), path_(std::move(path)), schema_(std::move(schema)), pos_(posOf(node, pos)) {
  if (!node.IsDefined() || node.IsNull()) {
    valid_ = true;
    return;
  }
  if (!node.IsMap()) {
    if (!ctx_.isFlagged(pos_)) ctx_.error(pos_, path_, "expected a map of keys, got " + describe(node));
    return;
  }
  valid_ = true;
  for (auto it = node.begin(); it != node.end(); ++it) {
    Pos kp = posOf(it->first, pos_);
    if (!it->first.IsScalar()) {
      ctx_.error(kp, path_, "a key must be a plain name, got " + describe(it->first));
      continue;
    }
    const std::string k = it->first.Scalar();
    auto [at, fresh] = index_.emplace(k, entries_.size());
    if (!fresh) {
      // yaml-cpp keeps both; the file's author meant one of them, and we cannot know which.
      ctx_.error(kp, pathOf(k), "duplicate key (first on line " + std::to_string(entries_[at->second].keyPos.line) + ")",
                 "keep one");
      continue;
    }
    entries_.push_back({k, it->second, kp});
  }
}

YAML::Node Map::take(const std::string& key) {
  if (std::find(declared_.begin(), declared_.end(), key) == declared_.end()) declared_.push_back(key);
  if (ctx_.schemaKeys) ctx_.schemaKeys->insert(ctx_.schemaFile + ": " + schemaOf(key));
  const Entry* e = find(key);
  return e ? e->value : YAML::Node(YAML::NodeType::Undefined);
}

const Map::Entry* Map::find(const std::string& key) const {
  auto it = index_.find(key);
  return it == index_.end() ? nullptr : &entries_[it->second];
}

bool Map::has(const std::string& key) const { return find(key) != nullptr; }

Pos Map::keyPos(const std::string& key) const {
  const Entry* e = find(key);
  return e ? e->keyPos : pos_;
}

Pos Map::valuePos(const std::string& key) const {
  const Entry* e = find(key);
  return e ? posOf(e->value, e->keyPos) : pos_;
}

std::vector<std::pair<std::string, YAML::Node>> Map::entries() const {
  std::vector<std::pair<std::string, YAML::Node>> out;
  for (auto& e : entries_) out.emplace_back(e.key, e.value);
  return out;
}

bool Map::str(const std::string& key, std::string& out, StrRule rule) {
  YAML::Node n = take(key);
  if (!n.IsDefined()) return false;
  auto v = readString(ctx_, n, keyPos(key), pathOf(key), rule);
  if (!v) return false;
  out = *v;
  return true;
}

bool Map::boolean(const std::string& key, bool& out) {
  YAML::Node n = take(key);
  if (!n.IsDefined()) return false;
  auto v = readBool(ctx_, n, keyPos(key), pathOf(key));
  if (!v) return false;
  out = *v;
  return true;
}

bool Map::integer(const std::string& key, int& out, std::int64_t min, std::int64_t max) {
  std::int64_t v = 0;
  if (!int64(key, v, min, max)) return false;
  out = static_cast<int>(v);
  return true;
}

bool Map::int64(const std::string& key, std::int64_t& out, std::int64_t min, std::int64_t max) {
  YAML::Node n = take(key);
  if (!n.IsDefined()) return false;
  auto v = readInt(ctx_, n, keyPos(key), pathOf(key), min, max);
  if (!v) return false;
  out = *v;
  return true;
}

bool Map::number(const std::string& key, double& out, double min, double max) {
  YAML::Node n = take(key);
  if (!n.IsDefined()) return false;
  auto v = readNumber(ctx_, n, keyPos(key), pathOf(key), min, max);
  if (!v) return false;
  out = *v;
  return true;
}

bool Map::strList(const std::string& key, std::vector<std::string>& out, StrRule rule,
                  const std::function<bool(const std::string&, Pos, const std::string&)>& check) {
  YAML::Node n = take(key);
  if (!n.IsDefined()) return false;
  Pos p = posOf(n, keyPos(key));
  if (n.IsNull()) {
    out.clear();
    return true;
  }
  if (!n.IsSequence()) {
    if (!ctx_.isFlagged(p))
      ctx_.error(p, pathOf(key), "expected a list of strings, got " + describe(n),
                 n.IsScalar() ? "write a single item as a list: [" + n.Scalar().substr(0, 40) + "]" : "");
    return false;
  }
  std::vector<std::string> items;
  bool ok = true;
  std::size_t i = 0;
  for (auto it = n.begin(); it != n.end(); ++it, ++i) {
    std::string ip = pathOf(key) + "[" + std::to_string(i) + "]";
    Pos itemPos = posOf(*it, p);
    auto v = readString(ctx_, *it, p, ip, rule);
    if (!v || (check && !check(*v, itemPos, ip))) {
      ok = false;
      continue;
    }
    items.push_back(*v);
  }
  // Keep the good items even when some are bad: the load fails anyway, and
  // cross-checks on what remains still find the other problems in one pass.
  out = std::move(items);
  return ok;
}

bool Map::secretName(const std::string& key, std::string& out) {
  YAML::Node n = take(key);
  if (!n.IsDefined()) return false;
  Pos p = posOf(n, keyPos(key));
  auto v = readString(ctx_, n, keyPos(key), pathOf(key));
  if (!v) return false;
  if (!isSecretName(*v)) {
    ctx_.error(p, pathOf(key), "expected the NAME of a secret in .env (like OPENAI_KEY), got " + describe(n),
               "names use A-Z, 0-9 and _; the value itself goes into .env with `pinectl secret set NAME`");
    return false;
  }
  ctx_.ref(Ref::Secret, *v, p, pathOf(key));
  out = *v;
  return true;
}

void Map::require(const std::string& key) {
  take(key);
  if (!has(key)) ctx_.error(pos_, path_, "missing required key '" + key + "'");
}

void Map::eachNamed(const std::string& key, const std::string& what,
                    const std::function<bool(const std::string&)>& nameOk, const std::string& nameRule,
                    const std::function<void(const std::string&, const YAML::Node&, const std::string&,
                                             const std::string&, Pos)>& fn) {
  YAML::Node n = take(key);
  if (!n.IsDefined() || n.IsNull()) return;
  Map inner(ctx_, n, pathOf(key), schemaOf(key), keyPos(key));
  if (!inner.valid()) return;
  for (auto& e : inner.entries_) {
    if (!nameOk(e.key)) {
      ctx_.error(e.keyPos, inner.pathOf(e.key), "'" + e.key.substr(0, 64) + "' is not a valid " + what + " name",
                 nameRule);
      continue;
    }
    fn(e.key, e.value, inner.pathOf(e.key), schemaOf(key) + ".<name>", posOf(e.value, e.keyPos));
  }
}

void Map::eachItem(const std::string& key,
                   const std::function<void(const YAML::Node&, const std::string&, const std::string&, Pos)>& fn) {
  YAML::Node n = take(key);
  if (!n.IsDefined() || n.IsNull()) return;
  Pos p = posOf(n, keyPos(key));
  if (!n.IsSequence()) {
    ctx_.error(p, pathOf(key), "expected a list, got " + describe(n), "start each item with '- '");
    return;
  }
  std::size_t i = 0;
  for (auto it = n.begin(); it != n.end(); ++it, ++i)
    fn(*it, pathOf(key) + "[" + std::to_string(i) + "]", schemaOf(key) + "[]", posOf(*it, p));
}

void Map::finish(const std::string& context) {
  if (!valid_) return;
  for (auto& e : entries_) {
    if (std::find(declared_.begin(), declared_.end(), e.key) != declared_.end()) continue;
    std::string hint = didYouMean(e.key, declared_);
    if (hint.empty() && !declared_.empty() && declared_.size() <= 12) {
      hint = "allowed here: ";
      for (std::size_t i = 0; i < declared_.size(); ++i) hint += (i ? ", " : "") + declared_[i];
    }
    ctx_.error(e.keyPos, pathOf(e.key), "unknown key '" + e.key.substr(0, 64) + "'" + context, hint);
  }
}

}  // namespace pine::config::detail
