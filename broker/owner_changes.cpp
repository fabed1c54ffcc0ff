// GET /v1/tasks/{id}/changes and POST /v1/tasks/{id}/undo (pinectl changes, pinectl undo): the
// task's agent from the store, the work by pined's checkpoint program (supervisor/checkpoint_call.h),
// whose JSON answer is passed on. A task answers before its worker has exited and its "after"
// checkpoint is taken: both wait for that first (TaskRunner::settled).
#include "broker/owner_api.h"
#include "common/log.h"
#include "common/rpc_link.h"

namespace pine {
namespace {

std::optional<ApiReply> notEnded(const std::optional<store::TaskRow>& t, const std::string& id) {
  if (!t) return apiError(404, "no task '" + id + "'");
  if (t->state == "queued" || t->state == "running")
    return apiError(409, "task " + id + " is still " + t->state + "; its changes are known once it has ended");
  return std::nullopt;
}

}  // namespace

kj::Promise<void> OwnerApi::settled(const std::string& task) {
  if (!p_.taskSettled) return kj::READY_NOW;
  return p_.taskSettled(task);
}

kj::Promise<ApiReply> OwnerApi::taskChanges(const std::string& id, bool diff) {
  auto t = p_.store.task(id);
  if (auto no = notEnded(t, id)) return *no;
  return settled(id).then([this, id, diff, agent = t->agent]() {
    auto req = p_.supervisor().taskChangesRequest();
    req.setTask(id);
    req.setAgent(agent);
    req.setDiff(diff);
    return req.send().then(
        [id, agent](auto&& r) {
          auto j = nlohmann::json::parse(std::string(r.getResult().cStr()), nullptr, false);
          if (!j.is_object()) return apiError(502, "pined's checkpoint answer for task " + id + " was not JSON");
          j["agent"] = agent;
          return ApiReply{200, j};
        },
        [id](kj::Exception&& e) { return apiError(404, "task " + id + ": " + describeRemote(e)); });
  });
}

kj::Promise<ApiReply> OwnerApi::undoTask(const std::string& id, bool force) {
  auto t = p_.store.task(id);
  if (auto no = notEnded(t, id)) return *no;
  return settled(id).then([this, id, force, agent = t->agent]() {
    auto req = p_.supervisor().undoTaskRequest();
    req.setTask(id);
    req.setAgent(agent);
    req.setForce(force);
    return req.send().then(
        [id, agent](auto&& r) {
          auto j = nlohmann::json::parse(std::string(r.getResult().cStr()), nullptr, false);
          if (!j.is_object()) return apiError(502, "pined's undo answer for task " + id + " was not JSON");
          j["agent"] = agent;
          if (!j.value("ok", false) && !j["changed_since"].empty() && j["failed"].empty()) {
            // Refused as a whole: later changes to the same files are not overwritten without --force.
            j["error"] = "not undone: these files changed again after task " + id +
                         " ended (a later run or you); undo with force to put them back anyway";
            return ApiReply{409, j};
          }
          return ApiReply{j.value("ok", false) ? 200 : 500, j};
        },
        [id](kj::Exception&& e) { return apiError(404, "task " + id + ": " + describeRemote(e)); });
  });
}

}  // namespace pine
