// A fake broker for the approval-flow tests: RunServices over a real store in a temporary
// folder, the real sessions and approvals desk, a timer the test moves by hand, and a
// record of what would have left the broker (notices, events). No processes, no sockets.
#pragma once
#include <doctest/doctest.h>
#include <kj/async.h>
#include <kj/timer.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "broker/approval_desk.h"
#include "broker/feed.h"
#include "broker/policy/profile.h"
#include "broker/run.h"
#include "broker/run_services.h"
#include "broker/sessions.h"
#include "broker/store/store.h"
#include "config/load.h"

namespace brokertest {

inline void writeFile(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

// A home with the agents given as (id, agent.yaml), an offline script model, and `pineExtra`
// appended to pine.yaml.
inline std::shared_ptr<const pine::config::Home> loadTestHome(
    const std::string& root, const std::vector<std::pair<std::string, std::string>>& agents,
    const std::string& pineExtra = "") {
  writeFile(root + "/pine.yaml", "defaults:\n  model: demo\n" + pineExtra);
  writeFile(root + "/models.yaml",
            "providers:\n  demo:\n    kind: script\n    script: providers/replies.yaml\n"
            "models:\n  demo:\n    provider: demo\n    contextWindow: 32768\n");
  writeFile(root + "/providers/replies.yaml", "replies:\n  - text: ok\n");
  for (auto& [id, yaml] : agents) writeFile(root + "/agents/" + id + "/agent.yaml", yaml);
  pine::config::LoadOptions opts;
  opts.skipEnv = true;
  auto r = pine::config::loadHome(root, opts);
  INFO(r.formatErrors());
  REQUIRE(r.ok());
  return std::make_shared<const pine::config::Home>(std::move(*r.home));
}

class FakeServices final : public pine::RunServices {
 public:
  // An initializer list, not a vector: a vector could also be built from {"id", "text"} as two
  // iterators, which makes a one-agent call ambiguous with the (deleted) copy constructor.
  explicit FakeServices(std::initializer_list<std::pair<std::string, std::string>> agents,
                        const std::string& pineExtra = "")
      : timer(kj::origin<kj::TimePoint>()) {
    char tmpl[] = "/tmp/pine-broker-test-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    root = tmpl;
    homeDirs.root = root;
    config = loadTestHome(root, {agents.begin(), agents.end()}, pineExtra);
    std::filesystem::create_directories(root + "/data");
    db = pine::store::Store::open(root + "/data/pine.db");
    desk = std::make_unique<pine::Approvals>(*db, feed, timer);
    sessionsPart = std::make_unique<pine::Sessions>(*db, config, [this](const std::string& agent, const std::string& text) {
      notices.push_back(agent + ": " + text);
    });
  }
  ~FakeServices() noexcept(false) override {
    desk.reset();
    sessionsPart.reset();
    db.reset();
    std::error_code ec;
    std::filesystem::remove_all(root, ec);
  }

  // A crash of the broker: the desk and whoever waited on it are gone; the store stays.
  void restartDesk() {
    desk.reset();
    desk = std::make_unique<pine::Approvals>(*db, feed, timer);
  }

  // A task row, as the queue stores one before its run starts (the journal belongs to it).
  void storeTask(const std::string& id, const std::string& agent, const std::string& session, int attempt = 0) {
    pine::store::TaskRow t;
    t.id = id;
    t.agent = agent;
    t.session = session;
    t.text = "a task";
    t.trust = "owner";
    t.state = "running";
    t.attempt = attempt;
    t.createdMs = 1;
    db->putTask(t);
  }

  // The run of `task` as the broker would start it: the agent's tools for an owner run.
  std::unique_ptr<pine::Run> run(const std::string& task, const std::string& agent, const std::string& session,
                                 int attempt = 0) {
    if (!db->task(task)) storeTask(task, agent, session, attempt);
    pine::RunRequest req;
    req.agent = agent;
    req.session = session;
    req.text = "a task";
    req.origin = "owner";
    pine::policy::RunContext ctx;
    auto tools = pine::policy::toolsForRun(*config, config->agents.at(agent), ctx);
    return std::make_unique<pine::Run>(*this, task, req, config, tools, pine::RunResume{attempt, 0});
  }

  std::vector<pine::store::ApprovalRow> pending() const { return db->approvals(true, 100); }
  // Moves the clock on and runs what became due.
  void advance(kj::Duration d, kj::WaitScope& ws) {
    timer.advanceTo(timer.now() + d);
    ws.poll();
  }

  // ---- RunServices ----
  const pine::Home& home() const override { return homeDirs; }
  pine::store::Store& store() override { return *db; }
  pine::Sessions& sessions() override { return *sessionsPart; }
  pine::Approvals& approvals() override { return *desk; }
  void progress(const std::string&, const std::string&) override {}
  void notifyOwner(const std::string& agent, const std::string& text, const std::string&, const std::string&) override {
    notices.push_back(agent + ": " + text);
  }
  void recordUsage(const std::string& taskId, const pine::store::Usage& usage) override {
    db->addTaskUsage(taskId, usage);
  }
  kj::Promise<pine::store::Event> publish(pine::store::Event draft) override {
    draft.id = "e" + std::to_string(events.size() + 1);
    events.push_back(draft);
    return draft;
  }
  kj::Promise<pine::store::Event> writeState(const std::string& key, const std::string& value, const std::string& by,
                                             pine::config::Trust) override {
    db->putState({key, value, 1, by});
    pine::store::Event e;
    e.topic = "state/" + key;
    return e;
  }
  kj::Promise<std::optional<std::string>> publishToSource(const std::string&, const std::string&,
                                                          const std::string&) override {
    return std::optional<std::string>("no sources in this test");
  }
  void addSubscription(const pine::store::SubscriptionRow& row) override { db->putSubscription(row); }
  void reloadConfiguration() override {}
  pine::Submitted submit(pine::RunRequest) override { return {"", "", "no runs of their own in this test", 503}; }
  kj::Promise<std::optional<pine::TaskRecord>> whenEnded(const std::string&) override {
    return std::optional<pine::TaskRecord>();
  }
  size_t runningSubagents(const std::string&, const std::string&) override { return 0; }
  pine::proto::Supervisor::Client supervisor() override { return nullptr; }

  std::string root;
  pine::Home homeDirs;
  std::shared_ptr<const pine::config::Home> config;
  kj::TimerImpl timer;
  pine::Feed feed;
  std::unique_ptr<pine::store::Store> db;
  std::unique_ptr<pine::Approvals> desk;
  std::unique_ptr<pine::Sessions> sessionsPart;
  std::vector<std::string> notices;
  std::vector<pine::store::Event> events;
};

}  // namespace brokertest
