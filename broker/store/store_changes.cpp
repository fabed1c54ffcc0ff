// What each task changed in its workspace (schema v8): written when the task's worker has ended and
// pined's checkpoint program counted the changes (broker/task_changes.cpp).
#include "broker/store/checks.h"
#include "broker/store/sqlite_db.h"
#include "broker/store/store.h"

namespace pine::store {

using namespace detail;

void Store::setTaskChanges(const TaskChangesRow& row) {
  requireNonEmpty(row.taskId, "task changes' task");
  auto st = db_->prepare(
      "INSERT INTO task_changes (task_id, agent, tainted, files, names, checked_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6) "
      "ON CONFLICT (task_id) DO UPDATE SET agent = excluded.agent, tainted = excluded.tainted, files = excluded.files, "
      "names = excluded.names, checked_ms = excluded.checked_ms",
      "recording what a task changed");
  st.bind(1, row.taskId).bind(2, row.agent).bind(3, row.tainted).bind(4, row.files).bind(5, row.names).bind(6, row.checkedMs);
  st.run();
}

std::optional<TaskChangesRow> Store::taskChanges(const std::string& taskId) const {
  auto st = db_->prepare("SELECT task_id, agent, tainted, files, names, checked_ms FROM task_changes WHERE task_id = ?1",
                         "reading what a task changed");
  st.bind(1, taskId);
  if (!st.step()) return std::nullopt;
  return TaskChangesRow{st.text(0), st.text(1), st.i64(2) != 0, st.i64(3), st.text(4), st.i64(5)};
}

}  // namespace pine::store
