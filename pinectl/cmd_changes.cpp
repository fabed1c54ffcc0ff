// pinectl changes TASK (what an ended task changed in its agent's workspace, with diffs) and
// pinectl undo TASK [--force] (put those files back as they were before it).
// Exit codes: 0 done; 1 failed (no such task, no checkpoint, pine down); 3 undo refused because
// files it changed were changed again later (nothing written; --force overrides).
#include <iostream>

#include "pinectl/api_call.h"
#include "pinectl/commands.h"
#include "pinectl/http_client.h"

namespace pine {
namespace {

std::string line(const nlohmann::json& f) {
  const std::string change = f.value("change", "");
  std::string out = change + ": " + f.value("path", "");
  if (change == "renamed") out = "renamed: " + f.value("from", "") + " -> " + f.value("path", "");
  if (f.contains("link_before") || f.contains("link_after"))
    out += " (link: " + f.value("link_before", std::string("none")) + " -> " + f.value("link_after", std::string("none")) + ")";
  return out;
}

void list(std::ostream& out, const char* title, const nlohmann::json& paths) {
  if (!paths.is_array() || paths.empty()) return;
  out << title << ":\n";
  for (const auto& p : paths) out << "  " << p.get<std::string>() << "\n";
}

}  // namespace

int cmdChanges(const std::string& home, const std::string& task, bool json, std::ostream& out, std::ostream& err) {
  auto a = callApi(home, "GET", "/v1/tasks/" + urlEncode(task) + "/changes");
  if (!a.ok()) return reportFailure(a, err);
  if (json) {
    out << a.body.dump(2) << "\n";
    return 0;
  }
  const auto& files = a.body["files"];
  if (files.empty()) out << "task " << task << " changed no files in the workspace of " << a.body.value("agent", "") << "\n";
  for (const auto& f : files) {
    out << line(f) << "\n";
    if (f.contains("diff")) out << f["diff"].get<std::string>();
  }
  for (const auto& s : a.body["skipped"])
    out << "not kept in the checkpoints: " << s.value("path", "") << " (" << s.value("why", "") << ")\n";
  return 0;
}

int cmdUndo(const std::string& home, const std::string& task, bool force, bool json, std::ostream& out,
            std::ostream& err) {
  auto a = callApi(home, "POST", "/v1/tasks/" + urlEncode(task) + "/undo", {{"force", force}});
  if (json && a.body.is_object()) out << a.body.dump(2) << "\n";
  if (a.status == 409 && a.body.is_object() && a.body.contains("changed_since")) {
    if (!json) {
      err << "pinectl: " << a.body.value("error", "not undone") << ":\n";
      for (const auto& p : a.body["changed_since"]) err << "  " << p.get<std::string>() << "\n";
      err << "pinectl undo " << task << " --force puts them back as they were before the task anyway\n";
    }
    return 3;
  }
  if (!a.ok()) {
    if (!json) {
      reportFailure(a, err);
      if (a.body.is_object() && a.body.contains("failed"))
        for (const auto& f : a.body["failed"]) err << "  " << f.value("path", "") << ": " << f.value("why", "") << "\n";
    }
    return 1;
  }
  if (json) return 0;
  list(out, "put back", a.body["restored"]);
  list(out, "removed (the task had made them)", a.body["removed"]);
  list(out, "overwritten although changed after the task (--force)", force ? a.body["changed_since"] : nlohmann::json());
  if (a.body["restored"].empty() && a.body["removed"].empty()) out << "task " << task << " changed no files: nothing to undo\n";
  return 0;
}

}  // namespace pine
