#include "supervisor/source_program.h"

#include <stdexcept>

#include "supervisor/supervisor.h"

namespace pine {

std::string sourceProgramPath(const config::Home& cfg, const std::string& home, const std::string& source,
                              std::string& error) {
  const config::Source* s = nullptr;
  for (const auto& c : cfg.pine.sources)
    if (c.name == source) s = &c;
  if (!s) {
    error = "no source '" + source + "' in pine.yaml";
    return "";
  }
  std::string file = s->use;
  if (file.empty())
    for (const auto& t : cfg.pine.sourceTypes)
      if (t.name == s->type) file = t.file;
  if (file.empty()) {
    error = "source '" + source + "' runs no program (no 'use', and type '" + s->type + "' is not a sourceTypes entry)";
    return "";
  }
  return file[0] == '/' ? file : home + "/" + file;
}

StartedProgram startSourceProgram(Supervisor& sup, kj::AsyncIoContext& io, const std::string& source) {
  auto cfg = sup.config();
  if (!cfg) throw std::runtime_error("no configuration is loaded");
  std::string error;
  std::string program = sourceProgramPath(*cfg, sup.home().root, source, error);
  if (program.empty()) throw std::runtime_error(error);
  // Its own folder in pine's home, for whatever it keeps between runs: outside data/, which the
  // broker may write, so that nothing the broker leaves there steers a program with pine's rights.
  OwnerProgram p;
  p.argv = {program};
  p.env = {"PINE_SOURCE=" + source};
  p.dir = sup.home().root + "/source-data/" + source;
  p.role = "source";
  p.name = source;
  return startOwnerProgram(sup, io, p);
}

}  // namespace pine
