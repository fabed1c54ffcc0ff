#include "config/load.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "common/names.h"
#include "config/env_file.h"
#include "config/folder_check.h"
#include "config/schema.h"

namespace pine::config {

std::string LoadResult::formatErrors() const { return config::formatErrors(errors); }

namespace {

using detail::Ctx;
using detail::Pos;
using detail::Ref;

// The home as the loader sees it: the disk, with the overlay on top.
class HomeView {
 public:
  HomeView(std::string root, const Overlay& overlay) : root_(std::move(root)), overlay_(overlay) {}

  const std::string& root() const { return root_; }
  std::string full(const std::string& rel) const { return rel.empty() || rel[0] == '/' ? rel : root_ + "/" + rel; }

  bool exists(const std::string& rel) const {
    if (auto it = overlay_.find(rel); it != overlay_.end()) return it->second.has_value();
    struct stat st;
    return stat(full(rel).c_str(), &st) == 0;
  }

  // nullopt with why set when it cannot be read.
  std::optional<std::string> read(const std::string& rel, std::string* why) const {
    if (auto it = overlay_.find(rel); it != overlay_.end()) {
      if (!it->second) *why = "does not exist";
      return it->second;
    }
    struct stat st;
    if (stat(full(rel).c_str(), &st) != 0) {
      *why = strerror(errno);
      return std::nullopt;
    }
    if (!S_ISREG(st.st_mode)) {
      *why = "is not a regular file";
      return std::nullopt;
    }
    std::ifstream f(full(rel), std::ios::binary);
    if (!f) {
      *why = strerror(errno);
      return std::nullopt;
    }
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  }

  // Folder names under agents/, with those the overlay adds.
  std::vector<std::string> agentDirs() const {
    std::set<std::string> out;
    if (DIR* d = opendir(full("agents").c_str())) {
      while (dirent* e = readdir(d)) {
        std::string n = e->d_name;
        if (n == "." || n == "..") continue;
        struct stat st;
        if (stat(full("agents/" + n).c_str(), &st) == 0 && S_ISDIR(st.st_mode)) out.insert(n);
      }
      closedir(d);
    }
    for (auto& [rel, text] : overlay_) {
      if (!text || rel.rfind("agents/", 0) != 0) continue;
      std::string rest = rel.substr(7);
      auto slash = rest.find('/');
      if (slash != std::string::npos && (rest.substr(slash + 1) == "agent.yaml" || rest.substr(slash + 1) == "agent.json"))
        out.insert(rest.substr(0, slash));
    }
    return {out.begin(), out.end()};
  }

 private:
  std::string root_;
  const Overlay& overlay_;
};

// base.yaml or base.json; both present is an error, since one would be silently ignored.
std::string pickFile(const HomeView& v, const std::string& base, std::vector<ConfigError>& errors) {
  const bool yaml = v.exists(base + ".yaml"), json = v.exists(base + ".json");
  if (v.exists(base + ".yml"))
    addError(errors, {v.full(base + ".yml"), 0, 0, "", "pine reads " + base + ".yaml (or " + base + ".json), not .yml",
                      "rename it to " + base + ".yaml"});
  if (yaml && json) {
    addError(errors, {v.full(base + ".json"), 0, 0, "",
                      "both " + base + ".yaml and " + base + ".json exist; pine reads one",
                      "pick one: merge what you need into it and delete the other"});
    return {};
  }
  return yaml ? base + ".yaml" : json ? base + ".json" : std::string();
}

// False when the file could not be read or parsed at all (its settings are then unknown).
template <class Fn>
bool readFile(const HomeView& v, const std::string& rel, const std::string& schemaFile, LoadOptions const& opts,
              std::vector<ConfigError>& errors, std::vector<Ref>& refs, Fn&& fn) {
  Ctx ctx;
  ctx.file = v.full(rel);
  ctx.homeDir = v.root();
  ctx.errors = &errors;
  ctx.refs = &refs;
  ctx.schemaKeys = opts.schemaKeys;
  ctx.schemaFile = schemaFile;
  std::string why;
  auto text = v.read(rel, &why);
  if (!text) {
    addError(errors, {ctx.file, 0, 0, "", "cannot read: " + why, ""});
    return false;
  }
  auto root = detail::parseDocument(ctx, *text);
  if (!root) return false;
  detail::scanLiteralSecrets(ctx, *root);
  fn(ctx, *root);
  return true;
}

std::vector<std::string> keysOf(const auto& m) {
  std::vector<std::string> out;
  for (auto& [k, v] : m) out.push_back(k);
  return out;
}

void resolve(const Home& home, const HomeView& view, const std::vector<Ref>& refs, std::vector<ConfigError>& errors,
             bool skipEnv) {
  auto err = [&](const Ref& r, std::string msg, std::string hint) {
    addError(errors, {r.file, r.pos.line, r.pos.column, r.keyPath, std::move(msg), std::move(hint)});
  };
  std::vector<std::string> sourceNames;
  for (auto& s : home.pine.sources) sourceNames.push_back(s.name);
  for (auto& w : home.pine.webhooks) sourceNames.push_back(w.name);
  const std::set<std::string> sourceSet(sourceNames.begin(), sourceNames.end());
  for (const Ref& r : refs) {
    if (errors.size() > kMaxErrors) break;  // the note is in; the rest would be dropped with their hints
    switch (r.kind) {
      case Ref::AgentOrAll:
        if (r.name == "*") break;
        [[fallthrough]];
      case Ref::Agent:
        if (!home.agents.count(r.name))
          err(r, "no agent '" + r.name + "' (there is no agents/" + r.name + "/agent.yaml)",
              whatExists(r.name, keysOf(home.agents), "agents"));
        break;
      case Ref::Model:
        if (!home.models.models.count(r.name))
          err(r, "no model '" + r.name + "' in models.yaml", whatExists(r.name, keysOf(home.models.models), "models"));
        break;
      case Ref::Provider:
        if (!home.models.providers.count(r.name))
          err(r, "no provider '" + r.name + "' in models.yaml",
              whatExists(r.name, keysOf(home.models.providers), "providers"));
        break;
      case Ref::Source:
        if (!sourceSet.count(r.name))
          err(r, "no source or webhook called '" + r.name + "'", whatExists(r.name, sourceNames, "sources and webhooks"));
        break;
      case Ref::Secret:
        if (!skipEnv && !home.envSecretNames.count(r.name)) {
          std::vector<std::string> names(home.envSecretNames.begin(), home.envSecretNames.end());
          std::string near = nearest(r.name, names);
          err(r, "secret '" + r.name + "' is not in .env",
              (near.empty() ? "" : "did you mean '" + near + "'? otherwise ") + "store it with `pinectl secret set " +
                  r.name + "`");
        }
        break;
      case Ref::HookSecret:
        // Its presence in .env is the Secret ref's error; here only its length.
        if (!skipEnv && home.envShortSecrets.count(r.name))
          err(r, "secret '" + r.name + "' is shorter than " + std::to_string(kMinHookSecretBytes) +
                     " bytes: a webhook's secret is all that keeps strangers from posting events",
              "store a long random value: `openssl rand -hex 32 | pinectl secret set " + r.name + "`");
        break;
      case Ref::EgressSecret:
        // Its presence in .env is the Secret ref's error; here only its length.
        if (!skipEnv && home.envTinySecrets.count(r.name))
          err(r, "secret '" + r.name + "' is shorter than " + std::to_string(kMinEgressSecretBytes) +
                     " bytes: pine-egress, which fills it in, could not redact so short a value from what comes back, "
                     "and does not use it",
              "store a value of at least " + std::to_string(kMinEgressSecretBytes) + " bytes: `pinectl secret set " +
                  r.name + "` (for a login name, an account with a longer one)");
        break;
      case Ref::HomeFile:
        if (r.name.find("..") != std::string::npos && r.name[0] != '/')
          err(r, "'" + r.name + "' leaves pine's home", "write a path inside the home, or an absolute one");
        else if (!view.exists(r.name))
          err(r, "file '" + r.name + "' does not exist (looked for " + view.full(r.name) + ")", "");
        break;
      case Ref::PinedFile: {
        // Read by pined at the source's start; the broker (skipEnv) cannot see the owner's files.
        if (skipEnv) break;
        std::string why;
        auto bytes = view.read(r.name, &why);
        if (!bytes)
          err(r, "cannot read '" + view.full(r.name) + "': " + why,
              "make it a file pine's user can read (a PEM certificate), or fix the path");
        else if (bytes->find("-----BEGIN CERTIFICATE-----") == std::string::npos)
          err(r, "'" + view.full(r.name) + "' holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
              "name the CA's certificate in PEM form");
        break;
      }
      case Ref::WatchedFolder:
        // pine-broker loads with skipEnv and does not look again: pined checked the folder before
        // starting it, and a folder that is gone now is the running source's to report.
        if (!skipEnv) {
          auto nl = r.name.find('\n');  // "path\nagent"
          std::string p = folderOnDiskProblem(r.name.substr(0, nl), home.root, r.name.substr(nl + 1));
          if (!p.empty()) err(r, p, "watch an existing folder outside pine's home, by its canonical absolute path");
        }
        break;
      case Ref::Pricing: {
        auto a = home.agents.find(r.name);
        if (a == home.agents.end()) break;
        const std::string& model = home.effectiveModel(a->second);
        auto m = home.models.models.find(model);
        if (m != home.models.models.end() && !m->second.pricing)
          err(r, "a money budget needs prices, and model '" + model + "' has no pricing in models.yaml",
              "add pricing: {input: ..., output: ...} (per million tokens) to the model, or use tokensPerDay");
        break;
      }
    }
  }
}

std::string trimSlash(std::string s) {
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

}  // namespace

LoadResult loadHome(const std::string& homeDirIn, const LoadOptions& opts) {
  LoadResult result;
  const std::string homeDir = trimSlash(homeDirIn);
  auto& errors = result.errors;
  struct stat st;
  if (stat(homeDir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    addError(errors, {homeDir, 0, 0, "", "pine's home is not a folder (" + std::string(strerror(errno)) + ")", ""});
    return result;
  }
  HomeView view(homeDir, opts.overlay);
  Home home;
  home.root = homeDir;
  std::vector<Ref> refs;
  bool complete = true;  // every file parsed: only then are missing references really missing

  if (std::string rel = pickFile(view, "pine", errors); !rel.empty()) {
    home.pine.file = view.full(rel);
    complete &= readFile(view, rel, "pine.yaml", opts, errors, refs,
                         [&](Ctx& c, const YAML::Node& root) { detail::readPine(c, root, home.pine); });
  } else if (opts.schemaKeys) {
    // Record the schema even for an absent file, so docs checks see every key.
    Ctx c;
    c.file = view.full("pine.yaml");
    c.schemaKeys = opts.schemaKeys;
    c.schemaFile = "pine.yaml";
    std::vector<ConfigError> ignored;
    c.errors = &ignored;
    detail::readPine(c, YAML::Node(YAML::NodeType::Map), home.pine);
  }
  if (std::string rel = pickFile(view, "models", errors); !rel.empty()) {
    home.models.file = view.full(rel);
    complete &= readFile(view, rel, "models.yaml", opts, errors, refs,
                         [&](Ctx& c, const YAML::Node& root) { detail::readModels(c, root, home.models); });
  }

  for (const std::string& id : view.agentDirs()) {
    if (id[0] == '.') continue;  // editor and VCS droppings
    const std::string dir = "agents/" + id;
    if (!isValidAgentId(id)) {
      addError(errors, {view.full(dir), 0, 0, "",
                        "'" + id + "' is not a valid agent id (a-z, 0-9, '_' and '-', at most 64, not starting with '-')",
                        "rename the folder"});
      continue;
    }
    std::string rel = pickFile(view, dir + "/agent", errors);
    if (rel.empty()) {
      if (!view.exists(dir + "/agent.yaml") && !view.exists(dir + "/agent.json"))
        addError(errors, {view.full(dir), 0, 0, "", "agent folder without agent.yaml",
                          "create " + dir + "/agent.yaml (an empty file gives the defaults), or move the folder out of agents/"});
      continue;
    }
    AgentConfig a;
    a.id = id;
    a.file = view.full(rel);
    complete &= readFile(view, rel, "agent.yaml", opts, errors, refs,
                         [&](Ctx& c, const YAML::Node& root) { detail::readAgent(c, root, a); });
    home.agents[id] = std::move(a);
  }

  // Names only: the values are wiped inside envFileNames.
  if (opts.skipEnv) {
    // The broker's view: it may not read .env; pined checked the secret names already.
  } else if (auto it = opts.overlay.find(".env"); it != opts.overlay.end()) {
    if (it->second) {
      auto values = parseEnvText(*it->second, view.full(".env"), &errors);
      for (auto& [k, v] : values) {
        home.envSecretNames.insert(k);
        if (v.size() < kMinHookSecretBytes) home.envShortSecrets.insert(k);
        if (v.size() < kMinEgressSecretBytes) home.envTinySecrets.insert(k);
      }
    }
  } else {
    home.envSecretNames = envFileNames(view.full(".env"), &errors, &home.envShortSecrets, kMinHookSecretBytes,
                                       &home.envTinySecrets, kMinEgressSecretBytes);
  }

  // After a file that did not parse, "no such agent/model" would be noise: report the parse error alone.
  for (auto& [id, a] : home.agents)
    if (complete && home.effectiveModel(a).empty())
      addError(errors, {a.file, 0, 0, "model", "agent '" + id + "' has no model",
                        "set model: NAME here, or defaults.model in pine.yaml (NAME is a key of models.yaml `models`)"});

  if (complete) resolve(home, view, refs, errors, opts.skipEnv);

  if (errors.empty()) result.home = std::move(home);
  std::stable_sort(errors.begin(), errors.end(), [](const ConfigError& a, const ConfigError& b) {
    if (a.file != b.file) return a.file < b.file;
    if (a.line != b.line) return a.line < b.line;
    return a.column < b.column;
  });
  return result;
}

LoadResult validateChange(const std::string& homeDir, const std::string& relPath, const std::string& text) {
  LoadOptions opts;
  opts.overlay[relPath] = text;
  return loadHome(homeDir, opts);
}

std::vector<ConfigError> validateFileText(const std::string& filename, const std::string& text) {
  std::vector<ConfigError> errors;
  std::vector<Ref> refs;
  std::string base = filename.substr(filename.find_last_of('/') + 1);
  if (base == ".env") {
    parseEnvText(text, filename, &errors);
    return errors;
  }
  Ctx ctx;
  ctx.file = filename;
  ctx.errors = &errors;
  ctx.refs = &refs;
  auto root = detail::parseDocument(ctx, text);
  if (!root) return errors;
  detail::scanLiteralSecrets(ctx, *root);
  if (base == "pine.yaml" || base == "pine.json") {
    PineConfig p;
    detail::readPine(ctx, *root, p);
  } else if (base == "models.yaml" || base == "models.json") {
    ModelsConfig m;
    detail::readModels(ctx, *root, m);
  } else if (base == "agent.yaml" || base == "agent.json") {
    AgentConfig a;
    // agents/<id>/agent.yaml: the folder is the id.
    std::string dir = filename.substr(0, filename.find_last_of('/') == std::string::npos ? 0 : filename.find_last_of('/'));
    a.id = dir.substr(dir.find_last_of('/') + 1);
    detail::readAgent(ctx, *root, a);
  } else {
    addError(errors, {filename, 0, 0, "", "not a configuration file pine knows",
                      "pine.yaml, models.yaml, agents/<id>/agent.yaml (or .json), .env"});
  }
  return errors;
}

std::vector<ConfigError> ActiveConfig::reload(const LoadOptions& options) {
  LoadResult r = loadHome(homeDir_, options);
  if (!r.ok()) return r.errors;
  auto next = std::make_shared<const Home>(std::move(*r.home));
  std::lock_guard<std::mutex> lock(mu_);
  current_ = std::move(next);
  return {};
}

std::shared_ptr<const Home> ActiveConfig::current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return current_;
}

std::string secretValueProblem(const std::string& homeDir, const std::vector<std::string>& envNames,
                               const std::string& name, std::size_t valueBytes) {
  // Stand-ins of the right lengths: the value itself never goes into a load.
  std::string env;
  for (auto& n : envNames)
    if (n != name) env += n + "=" + std::string(64, 'x') + "\n";
  env += name + "=" + std::string(valueBytes, 'x') + "\n";
  LoadOptions options;
  options.overlay[".env"] = env;
  std::string out;
  for (auto& e : loadHome(homeDir, options).errors) {
    if (e.message.find("secret '" + name + "' is shorter than") == std::string::npos) continue;
    std::string file = e.file.substr(e.file.find_last_of('/') + 1);
    out += (out.empty() ? "" : "\n") + file + ":" + std::to_string(e.line) + ": " + e.message +
           (e.hint.empty() ? "" : "; " + e.hint);
  }
  return out;
}

}  // namespace pine::config
