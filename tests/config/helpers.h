// A throwaway pine home for each test: a copy of config/examples/home (or an
// empty folder) with modes set as pined would set them.
#pragma once
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/errors.h"
#include "config/load.h"

namespace pine::config::test {

inline std::string exampleHome() { return std::string(PINE_SOURCE_ROOT) + "/config/examples/home"; }

class TempHome {
 public:
  explicit TempHome(bool fromExample = true) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "pine-config-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    root = tmpl;
    if (fromExample) {
      std::filesystem::copy(exampleHome(), root, std::filesystem::copy_options::recursive);
      chmod((root + "/pine.yaml").c_str(), 0600);
      chmod((root + "/models.yaml").c_str(), 0600);
    }
    chmod(root.c_str(), 0700);
  }
  ~TempHome() {
    std::error_code ec;
    std::filesystem::remove_all(root, ec);
  }
  TempHome(const TempHome&) = delete;
  TempHome& operator=(const TempHome&) = delete;

  std::string path(const std::string& rel) const { return root + "/" + rel; }

  void write(const std::string& rel, const std::string& text, unsigned mode = 0600) const {
    std::filesystem::create_directories(std::filesystem::path(path(rel)).parent_path());
    std::ofstream(path(rel), std::ios::binary | std::ios::trunc) << text;
    chmod(path(rel).c_str(), mode);
  }
  void append(const std::string& rel, const std::string& text) const {
    std::ofstream(path(rel), std::ios::binary | std::ios::app) << text;
  }
  // Replaces the first occurrence of from; throws when absent so a test cannot pass by editing nothing.
  void replace(const std::string& rel, const std::string& from, const std::string& to) const {
    std::ifstream in(path(rel), std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto at = text.find(from);
    if (at == std::string::npos) throw std::runtime_error("'" + from + "' not in " + rel);
    text.replace(at, from.size(), to);
    write(rel, text);
  }
  void remove(const std::string& rel) const { std::filesystem::remove_all(path(rel)); }

  LoadResult load() const { return loadHome(root); }

  std::string root;
};

// The first error whose key path is keyPath (or any, when empty) and whose message contains text.
inline const ConfigError* findError(const std::vector<ConfigError>& errors, const std::string& keyPath,
                                    const std::string& text = {}) {
  for (auto& e : errors)
    if ((keyPath.empty() || e.keyPath == keyPath) && e.message.find(text) != std::string::npos) return &e;
  return nullptr;
}

inline std::string dump(const std::vector<ConfigError>& errors) { return formatErrors(errors); }

}  // namespace pine::config::test
