// How what a tainted run left behind, and pined moved aside (sandbox::TaintUndo), is told:
// the fields of its `taint.undo` audit line and the list for the log.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "sandbox/sandbox_host.h"

namespace pine {

inline nlohmann::json taintUndoFields(const sandbox::TaintUndo& moved, nlohmann::json fields) {
  if (!moved.gitSettings.empty()) fields["git_settings_moved_aside"] = moved.gitSettings;
  if (!moved.instructionFiles.empty()) fields["instruction_files_moved_aside"] = moved.instructionFiles;
  fields["why"] =
      "a run that had read outside content created these; git would obey a repository's hooks and config, and "
      "later runs would read an instruction file as the owner's: they are kept beside as hooks.tainted-TASK, "
      "config.tainted-TASK and <name>.tainted-TASK, for the owner to read";
  return fields;
}

inline std::string taintUndoList(const sandbox::TaintUndo& moved) {
  std::string list;
  for (const auto* part : {&moved.gitSettings, &moved.instructionFiles})
    for (const auto& m : *part) list += (list.empty() ? "" : ", ") + m;
  return list;
}

}  // namespace pine
