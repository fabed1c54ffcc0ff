// What a task changed: its "before" and "after" manifests compared (added, deleted, modified,
// renamed: a deleted file whose bytes reappear under a new name), with a unified diff of text files
// and "binary, N bytes -> M bytes" for the others.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "checkpoint/manifest.h"

namespace pine::checkpoint {

struct Change {
  std::string kind;  // added | deleted | modified | renamed
  std::string path;  // the path after the task (the old one for deleted)
  std::string from;  // renamed: the path before
};

std::vector<Change> compare(const Manifest& before, const Manifest& after);

// Unified diff of two texts, 3 lines of context, with "--- a/PATH" / "+++ b/PATH" headers.
// Past 4,000,000 line pairs it says so instead of diffing.
std::string unifiedDiff(const std::string& a, const std::string& b, const std::string& fromPath,
                        const std::string& toPath);

bool looksBinary(const std::string& bytes);

// The JSON `pinectl changes` shows: {"files": [{path, change, from?, binary, before_bytes,
// after_bytes, diff?, link_before?, link_after?}], "skipped": [...]}. With withDiff false, no diff
// (the broker's summary of a run).
nlohmann::json describe(int shadow, const Manifest& before, const Manifest& after, bool withDiff);

}  // namespace pine::checkpoint
