// Loading and validating a pine home: pine.yaml, models.yaml,
// agents/<id>/agent.yaml (each also accepted as .json) and the NAMES in .env.
// The result is either a complete, valid Home or every error found; a
// configuration that does not validate never replaces a running one
// (ActiveConfig keeps the last good one).
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "config/errors.h"
#include "config/model.h"

namespace pine::config {

struct LoadResult {
  std::optional<Home> home;  // set only when errors is empty
  std::vector<ConfigError> errors;

  bool ok() const { return home.has_value(); }
  std::string formatErrors() const;  // one line per error, sorted by file and position
};

// Files seen instead of the disk's, by path relative to the home
// ("agents/scout/agent.yaml"); std::nullopt hides a file as if deleted. This is
// how a change request is validated exactly like the file it would become.
using Overlay = std::map<std::string, std::optional<std::string>>;

struct LoadOptions {
  Overlay overlay;
  // Do not read .env and do not check secret names against it: for pine-broker, which may
  // not read .env (pined validated the names before starting it).
  bool skipEnv = false;
  // When set, receives every key path the schema declared while reading, as
  // "pine.yaml: limits.queuePerAgent" (the docs test checks each is documented).
  std::set<std::string>* schemaKeys = nullptr;
};

LoadResult loadHome(const std::string& homeDir, const LoadOptions& options = {});

// What storing a value of `valueBytes` bytes as the .env secret `name` would break in the
// configuration on disk (a webhook's secret shorter than kMinHookSecretBytes), as
// "pine.yaml:12: <message>; <hint>"; empty when nothing would. `envNames` are the names .env
// holds now; their values are not read (every other one counts as long enough).
std::string secretValueProblem(const std::string& homeDir, const std::vector<std::string>& envNames,
                               const std::string& name, std::size_t valueBytes);

// The home as it would be with relPath replaced by text: full validation,
// cross-file references included.
LoadResult validateChange(const std::string& homeDir, const std::string& relPath, const std::string& text);

// One file on its own (kind from its name: pine.*, models.*, agent.*, .env):
// syntax, schema, types, values and literal secrets; references to other files
// are not resolved.
std::vector<ConfigError> validateFileText(const std::string& filename, const std::string& text);

// The configuration in force. reload() replaces it only with one that validated.
class ActiveConfig {
 public:
  explicit ActiveConfig(std::string homeDir) : homeDir_(std::move(homeDir)) {}

  // Empty on success (the new configuration is current); else the errors, and
  // the previous configuration stays current.
  std::vector<ConfigError> reload(const LoadOptions& options = {});
  std::shared_ptr<const Home> current() const;

 private:
  std::string homeDir_;
  mutable std::mutex mu_;
  std::shared_ptr<const Home> current_;
};

}  // namespace pine::config
