// One checkpoint of a workspace: what each file and link was (a manifest), the file contents kept
// once each by SHA-256 in the shadow folder (blobs/ab/abcd...), and what was left out and why.
// The workspace is hostile input: it is walked by descriptor, links are recorded as links and
// never followed, no other mount is entered, secrets files and large files are skipped and listed.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace pine::checkpoint {

struct Entry {
  bool link = false;
  mode_t mode = 0;       // permission bits of a file
  uint64_t size = 0;     // of a file
  std::string sha256;    // of a file's bytes, hex
  std::string target;    // of a link, as written
  bool operator==(const Entry& o) const {
    return link == o.link && (link ? target == o.target : sha256 == o.sha256 && mode == o.mode);
  }
};

struct Skipped {
  std::string path;
  std::string why;
};

struct Manifest {
  std::map<std::string, Entry> files;  // workspace-relative path -> what it was
  std::vector<Skipped> skipped;
};

struct Limits {
  uint64_t maxFileBytes = 8ull << 20;     // a larger file is skipped and listed
  uint64_t maxTotalBytes = 512ull << 20;  // past this, further files are skipped
  size_t maxEntries = 50000;
  int maxDepth = 64;
};

// Why a name is never read into a checkpoint (a secrets file: .env, .env.*, any case), or "".
std::string secretName(const std::string& name);

// Walks the workspace (an open directory) and stores new blobs under shadow (an open directory).
// Throws std::runtime_error with the path and the reason when the shadow cannot be written.
Manifest snapshot(int workspace, int shadow, const Limits& limits = {});

// Reads what the workspace holds now at these paths only (hashing, storing nothing).
std::map<std::string, Entry> current(int workspace, const std::vector<std::string>& paths, const Limits& limits = {});

nlohmann::json toJson(const Manifest& m);
Manifest fromJson(const nlohmann::json& j);

// manifests/<id>.json in the shadow folder; load throws when it is absent or unreadable.
void save(int shadow, const std::string& id, const Manifest& m);
bool exists(int shadow, const std::string& id);
Manifest load(int shadow, const std::string& id);

// A blob's bytes (throws when absent).
std::string readBlob(int shadow, const std::string& sha256);

}  // namespace pine::checkpoint
