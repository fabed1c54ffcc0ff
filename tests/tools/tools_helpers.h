// A temporary workspace beside an "outside" folder, and a ToolBox over it.
#pragma once
#include <doctest/doctest.h>
#include <stdlib.h>

#include <filesystem>
#include <map>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "common/tool_table.h"
#include "worker/tools/tool_box.h"

namespace tools_test {

namespace fsys = std::filesystem;
using nlohmann::json;
using pine::tools::ToolBox;
using pine::tools::ToolEnv;
using pine::tools::ToolResult;

inline void put(const std::string& path, const std::string& text) {
  fsys::create_directories(fsys::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "<missing>";
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline bool has(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

// The worker's tools' schemas as the broker hands them out (getTask): from the tool table.
inline std::map<std::string, json> tableSchemas() {
  std::map<std::string, json> out;
  for (const auto& row : pine::tooltable::builtinTools())
    if (row.side == pine::tooltable::Side::Worker) out[row.name] = row.parameters;
  return out;
}

// base/ws (the workspace), base/home, base/tmp, base/outside (no access).
struct Space {
  std::string base, ws, home, tmp, outside;
  Space() {
    char tmpl[] = "/tmp/pine-tools-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    base = fsys::canonical(tmpl).string();
    ws = base + "/ws";
    home = base + "/home";
    tmp = base + "/tmp";
    outside = base + "/outside";
    for (const auto& d : {ws, home, tmp, outside}) fsys::create_directories(d);
    put(outside + "/secret.txt", "OUTSIDE-SECRET");
  }
  ~Space() {
    std::error_code ec;
    fsys::remove_all(base, ec);
  }
  ToolEnv env(bool tainted = false) const {
    ToolEnv e;
    e.workspace = ws;
    e.tainted = tainted;
    e.home = home;
    e.tmpdir = tmp;
    e.schemas = tableSchemas();
    return e;
  }
  ToolBox box(bool tainted = false) const { return ToolBox(env(tainted)); }
};

// A refusal by the jail: an error whose text starts "refused '<path>':".
inline void checkRefused(const ToolResult& r, const std::string& path) {
  CHECK(r.isError);
  CHECK_MESSAGE(r.text.rfind("refused '" + path + "': ", 0) == 0, r.text);
}

}  // namespace tools_test
