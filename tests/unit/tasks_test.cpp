#include <doctest/doctest.h>

#include <set>

#include "broker/tasks.h"

TEST_CASE("a task ends once; the first word stands") {
  pine::TaskTable table;
  auto& t = table.create("main", "hi", 1000);
  CHECK(std::string(pine::toString(t.state)) == "queued");
  table.start(t, 42, "none", 1001);
  CHECK(std::string(pine::toString(t.state)) == "running");
  CHECK(table.active().size() == 1);
  CHECK(table.finish(t, "answer", 1002));
  CHECK_FALSE(table.fail(t, "late failure", 1003));
  CHECK(std::string(pine::toString(t.state)) == "done");
  CHECK(t.answer == "answer");
  CHECK(table.active().empty());
  auto j = t.toJson();
  CHECK(j["state"] == "done");
  CHECK(j["workerPid"] == 42);
  CHECK_FALSE(j.contains("error"));
}

TEST_CASE("task ids are unique and the table forgets only old ended tasks") {
  pine::TaskTable table(3);
  auto& running = table.create("a", "keep me", 1);
  table.start(running, 1, "none", 1);
  std::set<std::string> ids;
  for (int i = 0; i < 10; ++i) {
    auto& t = table.create("a", "x", 2 + i);
    ids.insert(t.id);
    table.fail(t, "boom", 3 + i);
  }
  CHECK(ids.size() == 10);
  CHECK(table.find(running.id) != nullptr);  // active tasks are never forgotten
  CHECK(table.recent(100).size() <= 4);
}
