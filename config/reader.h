// Internal to config/: the schema reader over yaml-cpp. A file's schema is the
// code that reads it (schema.cpp): each Map declares the keys it allows while it
// reads them, so "unknown key" and "did you mean" always agree with what is
// read, and the declared key paths can be listed (the docs test uses that).
#pragma once
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "config/errors.h"

namespace pine::config::detail {

struct Pos {
  int line = 0;  // 1-based; 0 unknown
  int column = 0;
};

// Something named in one place that must exist in another; resolved once the
// whole home is read.
struct Ref {
  // PinedFile: a file only pined reads (an MQTT source's caFile): checked where .env is.
  enum Kind { Agent, AgentOrAll, Model, Provider, Source, Secret, HookSecret, EgressSecret, HomeFile, PinedFile, Pricing, WatchedFolder };
  Kind kind;
  std::string name;  // for HomeFile: the path as written; WatchedFolder: "path\nagent"; for Pricing: the agent id
  std::string file;
  Pos pos;
  std::string keyPath;
};

struct Ctx {
  std::string file;     // as shown in errors
  std::string homeDir;  // for sandbox paths that would cover the home; may be empty
  std::vector<ConfigError>* errors = nullptr;
  std::vector<Ref>* refs = nullptr;
  std::set<std::pair<int, int>> flagged;  // positions already reported as literal secrets
  std::set<std::string>* schemaKeys = nullptr;  // records "file: key.path" when set
  std::string schemaFile;                       // "pine.yaml", "models.yaml", "agent.yaml"

  void error(Pos p, const std::string& keyPath, std::string message, std::string hint = {});
  void ref(Ref::Kind k, const std::string& name, Pos p, const std::string& keyPath);
  bool isFlagged(Pos p) const { return flagged.count({p.line, p.column}) != 0; }
  // kMaxErrors reached: further errors are dropped, so their hints need not be found.
  bool full() const { return errors && errorsFull(*errors); }
};

Pos posOf(const YAML::Node& n, Pos fallback);
bool isPlain(const YAML::Node& n);
std::string describe(const YAML::Node& n);  // "a list", "'abc'", "the string '8080'", ...

// Parses text; reports malformed YAML/JSON with its line:column. Empty or
// comment-only text is an empty map. The root must be a map.
std::optional<YAML::Node> parseDocument(Ctx& ctx, const std::string& text);

// Reports literal credentials anywhere in the document and marks them flagged.
void scanLiteralSecrets(Ctx& ctx, const YAML::Node& root);

struct StrRule {
  bool nonEmpty = true;
  bool secretRefs = false;  // ${secret:NAME} placeholders allowed (and recorded)
  std::size_t maxLen = 4096;
};

std::optional<std::string> readString(Ctx&, const YAML::Node&, Pos, const std::string& path, StrRule = {});
std::optional<bool> readBool(Ctx&, const YAML::Node&, Pos, const std::string& path);
std::optional<std::int64_t> readInt(Ctx&, const YAML::Node&, Pos, const std::string& path, std::int64_t min,
                                    std::int64_t max);
std::optional<double> readNumber(Ctx&, const YAML::Node&, Pos, const std::string& path, double min, double max);
std::optional<std::string> readEnumText(Ctx&, const YAML::Node&, Pos, const std::string& path,
                                        const std::vector<std::string>& allowed);

class Map {
 public:
  Map(Ctx& ctx, const YAML::Node& node, std::string path, std::string schema, Pos pos);
  Map(const Map&) = delete;
  Map& operator=(const Map&) = delete;

  bool valid() const { return valid_; }
  Ctx& ctx() { return ctx_; }
  const std::string& path() const { return path_; }
  Pos pos() const { return pos_; }

  // Declares key as allowed here and returns its value (undefined when absent).
  YAML::Node take(const std::string& key);
  bool has(const std::string& key) const;
  Pos keyPos(const std::string& key) const;
  Pos valuePos(const std::string& key) const;
  std::string pathOf(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  std::string schemaOf(const std::string& key) const { return schema_.empty() ? key : schema_ + "." + key; }
  // The keys as written, in order (for maps keyed by name).
  std::vector<std::pair<std::string, YAML::Node>> entries() const;

  bool str(const std::string& key, std::string& out, StrRule rule = {});
  bool boolean(const std::string& key, bool& out);
  bool integer(const std::string& key, int& out, std::int64_t min, std::int64_t max);
  bool int64(const std::string& key, std::int64_t& out, std::int64_t min, std::int64_t max);
  bool number(const std::string& key, double& out, double min, double max);
  bool strList(const std::string& key, std::vector<std::string>& out, StrRule rule = {},
               const std::function<bool(const std::string&, Pos, const std::string&)>& check = {});
  // A NAME of a .env entry; recorded so a missing one is reported.
  bool secretName(const std::string& key, std::string& out);
  template <class E>
  bool enumeration(const std::string& key, E& out, const std::vector<std::pair<std::string, E>>& values) {
    YAML::Node n = take(key);
    if (!n.IsDefined()) return false;
    std::vector<std::string> names;
    for (auto& v : values) names.push_back(v.first);
    auto text = readEnumText(ctx_, n, valuePos(key), pathOf(key), names);
    if (!text) return false;
    for (auto& v : values)
      if (v.first == *text) out = v.second;
    return true;
  }

  void require(const std::string& key);
  // Each map entry is read with fn(name, value, path, schema, pos); name must satisfy nameOk.
  void eachNamed(const std::string& key, const std::string& what,
                 const std::function<bool(const std::string&)>& nameOk, const std::string& nameRule,
                 const std::function<void(const std::string&, const YAML::Node&, const std::string&,
                                          const std::string&, Pos)>& fn);
  // Each list item with fn(item, path, schema, pos).
  void eachItem(const std::string& key,
                const std::function<void(const YAML::Node&, const std::string&, const std::string&, Pos)>& fn);

  // Reports keys not declared with take(); call after reading everything.
  void finish(const std::string& context = {});

 private:
  struct Entry {
    std::string key;
    YAML::Node value;
    Pos keyPos;
  };
  Ctx& ctx_;
  std::string path_, schema_;
  Pos pos_;
  bool valid_ = false;
  const Entry* find(const std::string& key) const;

  std::vector<Entry> entries_;
  std::unordered_map<std::string, std::size_t> index_;  // key -> entries_ (a map may hold thousands of keys)
  std::vector<std::string> declared_;
};

}  // namespace pine::config::detail
