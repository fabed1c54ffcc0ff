// Source programs (docs/sources.md "source programs") through the real pined and broker: the
// owner's program runs with pine's rights in its own folder with a minimal environment, its
// JSON lines become events with the source's trust, garbage and over-long lines are skipped and
// counted, a flood is paced without loss, a program that ends is started again, publishing
// reaches it only on its publish list, and nothing of its session outlives pined. add_source_type: only
// main, never in a tainted conversation, always asked with the program's facts, and what runs is
// the copy the owner confirmed.
#include <doctest/doctest.h>
#include <openssl/evp.h>
#include <sys/stat.h>

#include <filesystem>
#include <set>

#include "tests/integration/harness.h"

using namespace pine::test;
using namespace std::chrono_literals;

namespace {

const std::string kSpFixture = "/tests/fixtures/source_program.sh";

void spWriteProgram(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  writeText(path, text);
  chmod(path.c_str(), 0755);
}

std::string spSha256(const std::string& bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(bytes.data(), bytes.size(), md, &n, EVP_sha256(), nullptr);
  std::string out;
  char buf[3];
  for (unsigned i = 0; i < n; ++i) {
    snprintf(buf, sizeof buf, "%02x", md[i]);
    out += buf;
  }
  return out;
}

// The events of `source` on topics matching `topic` (a pattern, # escaped for the URL), all pages.
std::vector<nlohmann::json> spEvents(Pined& p, const std::string& source, const std::string& topic = "%23") {
  std::vector<nlohmann::json> out;
  long long after = 0;
  for (;;) {
    auto j = p.api("GET", "/v1/events?limit=1000&source=" + source + "&topic=" + topic + "&after=" +
                              std::to_string(after)).json();
    if (!j.is_object() || !j.contains("events") || j["events"].empty()) return out;
    for (auto& e : j["events"]) out.push_back(e);
    after = j["events"].back()["seq"].get<long long>();
    if (j["events"].size() < 1000) return out;
  }
}

nlohmann::json spPayload(const nlohmann::json& e) { return e["payload"]; }

nlohmann::json spSource(Pined& p, const std::string& name) {
  auto j = nlohmann::json::parse(p.ctl({"sources", "--json"}).out, nullptr, false);
  if (j.is_discarded()) return nullptr;
  for (auto& s : j["sources"])
    if (s["name"] == name) return s;
  return nullptr;
}

bool spHas(const nlohmann::json& t, const char* field, const std::string& part) {
  return t.is_object() && t.contains(field) && t[field].is_string() &&
         t[field].get<std::string>().find(part) != std::string::npos;
}

nlohmann::json spWaitTask(Pined& p, const std::string& agent, const std::string& id) {
  nlohmann::json found;
  waitUntil([&] {
    auto j = p.api("GET", "/v1/tasks?agent=" + agent).json();
    if (!j.is_object() || !j.contains("tasks")) return false;
    for (auto& t : j["tasks"])
      if (t["id"] == id && taskEnded(t)) {
        found = t;
        return true;
      }
    return false;
  }, 30s);
  return found;
}

size_t spApprovals(Pined& p, const std::string& tool) {
  size_t n = 0;
  auto j = p.api("GET", "/v1/approvals").json();
  if (j.is_object() && j.contains("approvals"))
    for (auto& a : j["approvals"]) n += a["tool"] == tool;
  return n;
}

std::vector<std::string> spWorker() { return {"--worker-program", testBinDir() + "/fixtures/test-worker"}; }

}  // namespace

TEST_CASE("source programs: events with the source's trust, garbage counted, floods paced, restarts, publish list") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  writeMinimalConfig(home, {"main"});
  writeText(home + "/agents/main/agent.yaml", "description: main\ntools: [read, send]\n");
  spWriteProgram(home + "/programs/prog.sh", readText(sourceDir() + kSpFixture));
  writeText(home + "/pine.yaml",
            readText(home + "/pine.yaml") +
                "sources:\n"
                "  - {name: prog, use: programs/prog.sh, start: always, publish: ['cmd/#'], options: {mode: garbage}}\n"
                "  - {name: mine, use: programs/prog.sh, start: always, trust: owner}\n"
                "  - {name: crashy, use: programs/prog.sh, start: always, options: {mode: crash}}\n"
                "  - {name: long, use: programs/prog.sh, start: always, options: {mode: long}}\n"
                "  - {name: flood, use: programs/prog.sh, start: always, options: {mode: flood}}\n");
  auto check = run({binDir() + "/pinectl", "--home", home, "check"});
  // check names every program that runs with pine's rights, with its SHA-256.
  CHECK_MESSAGE(contains(check.out + check.err, "programs/prog.sh"), (check.out + check.err));
  CHECK_MESSAGE(contains(check.out + check.err, spSha256(readText(home + "/programs/prog.sh")).substr(0, 12)),
                (check.out + check.err));
  Pined pined(home, spWorker(), {});

  // The first line, its folder, its environment: nothing of pined's, no secret.
  REQUIRE(waitUntil([&] { return !spEvents(pined, "prog", "prog/hello").empty(); }, 20s));
  auto hello = spPayload(spEvents(pined, "prog", "prog/hello")[0]);
  CHECK(hello["hello"] == nlohmann::json::parse(R"({"source":"prog","options":{"mode":"garbage"}})"));
  CHECK(hello["cwd"] == home + "/source-data/prog");
  CHECK(hello["home"] == home + "/source-data/prog");
  CHECK(hello["path"] == "/usr/local/bin:/usr/bin:/bin");
  CHECK(hello["vars"].get<int>() < 10);
  CHECK(spEvents(pined, "prog", "prog/hello")[0]["trust"] == "untrusted");
  // A line without a topic gets the source's name; trust: owner marks the events as the owner's.
  REQUIRE(waitUntil([&] { return !spEvents(pined, "mine", "mine").empty(); }, 20s));
  CHECK(spEvents(pined, "mine", "mine")[0]["trust"] == "owner");
  CHECK(spEvents(pined, "mine", "prog/hello")[0]["trust"] == "owner");

  // Garbage is skipped and counted, never fatal: what follows it arrives; pine's own topics are not forged.
  REQUIRE(waitUntil([&] { return !spEvents(pined, "prog", "prog/after-garbage").empty(); }, 20s));
  CHECK(spEvents(pined, "prog", "agent/forged").empty());
  CHECK(spEvents(pined, "prog").size() == 3);  // hello, the one without topic, after-garbage
  nlohmann::json st;
  CHECK(waitUntil([&] {
    st = spSource(pined, "prog");
    return st.is_object() && st.value("errors", 0) >= 1 && st.contains("found");
  }, 10s));
  CAPTURE(st.dump());
  CHECK(spHas(st, "lastError", "skipped"));
  CHECK(st["found"] == "3");
  CHECK(st["state"] == "running");

  // An over-long line is dropped and counted; the next line arrives.
  REQUIRE(waitUntil([&] { return !spEvents(pined, "long", "prog/after-long").empty(); }, 20s));
  CHECK(spEvents(pined, "long", "prog/long").empty());
  CHECK(waitUntil([&] { return spHas(spSource(pined, "long"), "lastError", "longer than"); }, 10s));

  // A flood is paced, not lost, and the others are heard meanwhile.
  CHECK(waitUntil([&] { return !spEvents(pined, "flood", "prog/after-flood").empty(); }, 60s));
  CHECK(spEvents(pined, "flood", "prog/flood").size() == 3000);

  // Publishing reaches the program only on its publish list.
  pined.api("PUT", "/v1/agents/main/mode", "{\"mode\": \"bypass\"}");
  auto t = message(pined, "main",
                   "CALL send {\"to\": \"prog\", \"topic\": \"cmd/light\", \"text\": \"{\\\"on\\\": true}\"}\n"
                   "CALL send {\"to\": \"prog\", \"topic\": \"other/light\", \"text\": \"off\"}\n"
                   "CALL send {\"to\": \"mine\", \"topic\": \"cmd/light\", \"text\": \"off\"}\n");
  CAPTURE(t.dump());
  CHECK(spHas(t, "answer", "send: ok: sent through prog on cmd/light"));
  CHECK(spHas(t, "answer", "not on the source's publish list"));
  CHECK(spHas(t, "answer", "source 'mine' only receives"));
  REQUIRE(waitUntil([&] { return !spEvents(pined, "prog", "prog/echo").empty(); }, 20s));
  auto echoes = spEvents(pined, "prog", "prog/echo");
  CHECK(echoes.size() == 1);
  CHECK(spPayload(echoes[0]) == nlohmann::json::parse(R"({"publish":{"topic":"cmd/light","payload":{"on":true}}})"));
  CHECK(spEvents(pined, "mine", "prog/echo").empty());

  // A program that ends is started again, with backoff, and says why meanwhile.
  CHECK(waitUntil([&] { return spEvents(pined, "crashy", "prog/crash").size() >= 2; }, 20s));
  auto crashes = spEvents(pined, "crashy", "prog/crash");
  CHECK(spPayload(crashes[0]) != spPayload(crashes[1]));  // two processes
  CHECK(waitUntil([&] { return spHas(spSource(pined, "crashy"), "why", "exited with 7"); }, 20s));

  // Nothing of its session outlives pined.
  pid_t pid = spPayload(spEvents(pined, "prog", "prog/hello")[0])["pid"].get<int>();
  CHECK(alive(pid));
  pined.stop();
  CHECK(waitUntil([&] { return !alive(pid); }, 5s));
  CHECK(processesMentioning(home + "/programs/prog.sh").empty());
}

TEST_CASE("add_source_type: only main, never tainted, always asked with the facts; the confirmed copy runs") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  writeMinimalConfig(home, {"main", "relay-side"});
  writeText(home + "/pine.yaml", readText(home + "/pine.yaml") + "security:\n  taintTools: [read]\n");
  writeText(home + "/agents/main/agent.yaml", "description: main\ntools: [read, add_source_type]\nmode: bypass\n");
  writeText(home + "/agents/relay-side/agent.yaml", "description: side\ntools: [read, add_source_type]\n");
  const std::string ws = home + "/agents/main/workspace";
  const std::string original = readText(sourceDir() + kSpFixture);
  spWriteProgram(ws + "/prog.sh", original);
  writeText(ws + "/note.txt", "a note\n");
  std::filesystem::create_symlink(home + "/pine.yaml", ws + "/link.sh");
  Pined pined(home, spWorker(), {});
  const std::string add = R"(CALL add_source_type {"name": "prog", "path": "prog.sh"})" "\n";

  // Not main: the tool is not there at all.
  auto t = message(pined, "relay-side", add + R"(GATE add_source_type {"name": "prog", "path": "prog.sh"})" "\n");
  CHECK_MESSAGE(spHas(t, "answer", "add_source_type: absent"), t.dump());
  CHECK_MESSAGE(spHas(t, "answer", "gate add_source_type: refused"), t.dump());
  // What cannot be read as a program in the workspace is refused without a question.
  t = message(pined, "main",
              R"(CALL add_source_type {"name": "a", "path": "link.sh"})" "\n"
              R"(CALL add_source_type {"name": "b", "path": "../../../pine.yaml"})" "\n"
              R"(CALL add_source_type {"name": "mqtt", "path": "prog.sh"})" "\n",
              true, "checks");
  CAPTURE(t.dump());
  CHECK(spHas(t, "answer", "is a symlink"));
  CHECK(spHas(t, "answer", "leaves your workspace"));
  CHECK(spHas(t, "answer", "'mqtt' is a built-in source type"));
  CHECK(spApprovals(pined, "add_source_type") == 0);

  // Bypass mode, clean conversation: asked all the same, with what the program is.
  auto started = message(pined, "main", add, false, "one");
  auto a = pendingApproval(pined);
  REQUIRE(a.is_object());
  CHECK(a["tool"] == "add_source_type");
  const std::string q = a.dump();
  const std::string sha = spSha256(original);
  CHECK_MESSAGE(contains(q, "PROGRAM"), q);
  CHECK(contains(q, "pine's own rights"));
  CHECK(contains(q, "prog.sh"));
  CHECK(contains(q, std::to_string(original.size()) + " bytes"));
  CHECK(contains(q, sha));
  CHECK(contains(q, "VERSION=confirmed"));  // its first lines
  CHECK(pined.api("POST", "/v1/approvals/" + a["id"].get<std::string>() + "/approve", "{}").status == 200);
  t = spWaitTask(pined, "main", started["task"]);
  CHECK_MESSAGE(spHas(t, "answer", "add_source_type: ok: source type 'prog' registered"), t.dump());
  const std::string copy = home + "/source-types/prog-" + sha.substr(0, 12);
  CHECK(readText(copy) == original);
  struct stat st;
  REQUIRE(stat(copy.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0555);
  CHECK(contains(readText(home + "/pine.yaml"), "source-types/prog-" + sha.substr(0, 12)));

  // The original changes afterwards: what runs is still the copy the owner confirmed.
  std::string changed = original;
  changed.replace(changed.find("VERSION=confirmed"), 17, "VERSION=changedit");
  spWriteProgram(ws + "/prog.sh", changed);
  writeText(home + "/pine.yaml", readText(home + "/pine.yaml") + "sources:\n  - {name: p1, type: prog, start: always}\n");
  auto r = pined.ctl({"reload"});
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  REQUIRE_MESSAGE(waitUntil([&] { return !spEvents(pined, "p1", "prog/hello").empty(); }, 20s),
                  tailOf(pined.stderrText(), 3000));
  CHECK(spPayload(spEvents(pined, "p1", "prog/hello")[0])["version"] == "confirmed");

  // A file changed between the question and the yes is refused, and nothing is registered.
  started = message(pined, "main", R"(CALL add_source_type {"name": "prog2", "path": "prog.sh"})" "\n", false, "two");
  a = pendingApproval(pined, a["id"].get<std::string>());
  REQUIRE(a.is_object());
  CHECK(contains(a.dump(), spSha256(changed)));
  spWriteProgram(ws + "/prog.sh", changed + "# one more line\n");
  CHECK(pined.api("POST", "/v1/approvals/" + a["id"].get<std::string>() + "/approve", "{}").status == 200);
  t = spWaitTask(pined, "main", started["task"]);
  CHECK_MESSAGE(spHas(t, "answer", "the file changed after you were asked"), t.dump());
  CHECK_FALSE(contains(readText(home + "/pine.yaml"), "prog2"));
  for (auto& e : std::filesystem::directory_iterator(home + "/source-types"))
    CHECK_FALSE(contains(e.path().filename().string(), "prog2"));

  // A conversation that has read outside content is refused without a question, in bypass too.
  size_t before = spApprovals(pined, "add_source_type");
  t = message(pined, "main", "GATE read {\"path\": \"note.txt\"}\n" R"(CALL add_source_type {"name": "prog3", "path": "prog.sh"})" "\n",
              true, "web");
  CHECK_MESSAGE(spHas(t, "answer", "add_source_type: error: refused"), t.dump());
  CHECK(spHas(t, "answer", "a source type is a program"));
  CHECK(spApprovals(pined, "add_source_type") == before);
}
