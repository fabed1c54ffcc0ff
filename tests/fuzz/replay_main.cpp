// Replays a fuzz target's inputs as a doctest test case, so that every build (gcc
// included, where libFuzzer is not available) runs the seed corpus and every
// regression input through the target. The target is linked in: it defines
// LLVMFuzzerTestOneInput. FUZZ_INPUT_DIRS is a ':'-separated list of folders (each
// file one input); FUZZ_LINE_FILES a ':'-separated list of test corpora (seeds.txt).
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::vector<std::string> splitList(const std::string& dirs) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    if (end > start) out.emplace_back(dirs.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

int runOne(const std::string& bytes) {
  return LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

// The inputs of one test corpus, as scripts/fuzz writes them out.
std::vector<std::string> linesOf(const std::string& path) {
  std::vector<std::string> out;
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "missing seed corpus " << path);
  bool jsonl = path.size() > 6 && path.substr(path.size() - 6) == ".jsonl";
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || (!jsonl && line[0] == '#')) continue;
    out.push_back(jsonl ? nlohmann::json::parse(line).get<std::string>() : line);
  }
  return out;
}

}  // namespace

TEST_CASE("every seed and regression input runs through the fuzz target") {
  size_t count = 0;
  for (const auto& dir : splitList(FUZZ_INPUT_DIRS)) {
    if (!std::filesystem::is_directory(dir)) continue;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
      if (!entry.is_regular_file()) continue;
      std::ifstream in(entry.path(), std::ios::binary);
      std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      CAPTURE(entry.path().string());
      // A target returns 0; a broken property aborts (caught by the test runner as a crash).
      CHECK(runOne(bytes) == 0);
      ++count;
    }
  }
  for (const auto& file : splitList(FUZZ_LINE_FILES)) {
    for (const auto& input : linesOf(file)) {
      CAPTURE(input);
      CHECK(runOne(input) == 0);
      ++count;
    }
  }
  // Also the empty input, which every parser must survive.
  CHECK(LLVMFuzzerTestOneInput(nullptr, 0) == 0);
  MESSAGE(count << " inputs replayed");
  CHECK(count > 0);
}
