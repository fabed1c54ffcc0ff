// The real pine-egress program, started as pined starts it (exec, fd 3, the egress sandbox
// plan): it makes the request its job names and answers in frames, refuses a job pined did
// not write, and inside its sandbox reaches the network and the resolver and CA files but
// not pine's home, its .env, the rest of /etc, a folder to write in, or another program.
#include <doctest/doctest.h>
#include <capnp/message.h>
#include <capnp/serialize.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "common/sanitizer_env.h"
#include "common/unix_socket.h"
#include "proto/egress.capnp.h"
#include "sandbox/linux/plan.h"
#include "supervisor/egress_call.h"
#include "supervisor/spawn.h"
#include "tests/egress/egress_fixture.h"
#include "common/cloexec.h"

using namespace pine::egress;
using namespace pine::egress::test;

namespace {

const std::string kProgKey = "sk-prog-9a7c5e3b1d0f2468";
const std::string kProgOther = "sk-other-00aa11bb22cc33dd";

struct ProgSecrets : SecretLookup {
  std::map<std::string, std::string, std::less<>> values{{"API_KEY", kProgKey}, {"OTHER", kProgOther}};
  std::optional<std::string> get(std::string_view name) const override {
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  }
};

std::string jobFor(const EgressRequest& req, EgressPolicy policy = {}) {
  policy.allowLoopback = true;
  policy.caPem = tls().caPem;
  policy.connectTimeoutMs = 3000;
  policy.totalTimeoutMs = 10000;
  auto job = pine::prepareEgressJob(req, policy, ProgSecrets());
  REQUIRE_MESSAGE(job.refused.empty(), job.refused);
  auto b = job.message.asBytes();
  return std::string(reinterpret_cast<const char*>(b.begin()), b.size());
}

struct ProbeHome {
  std::string dir, home;
  ProbeHome() {
    char tmpl[] = "/tmp/pine-egress-probe-XXXXXX";
    REQUIRE(mkdtemp(tmpl));
    dir = tmpl;
    home = dir + "/home";
    std::filesystem::create_directories(home + "/data");
    // Readable by everyone, so that only the sandbox stands between the process and them.
    chmod(dir.c_str(), 0755);
    chmod(home.c_str(), 0755);
    chmod((home + "/data").c_str(), 0755);
    std::ofstream(home + "/.env") << "API_KEY=" << kProgKey << "\n";
    std::ofstream(home + "/data/pine.db") << "database";
    chmod((home + "/.env").c_str(), 0644);
    chmod((home + "/data/pine.db").c_str(), 0644);
  }
  ~ProbeHome() { std::filesystem::remove_all(dir); }
};

// Runs tests/egress/egress-probe in `box` and returns "op arg" -> result.
std::map<std::string, std::string> probe(const pine::sandbox::PreparedSandbox* box, const std::vector<std::string>& ops) {
  const std::string program = pine::programDir() + "/egress-probe";
  int out[2];
  REQUIRE(pine::pipeCloexec(out) == 0);
  pine::SpawnSpec spec;
  spec.program = program;
  spec.args = {program};
  spec.args.insert(spec.args.end(), ops.begin(), ops.end());
  spec.env = {"LANG=C.UTF-8"};
  for (auto& e : pine::sanitizerEnvironment(true)) spec.env.push_back(e);
  spec.stdoutFd = out[1];
  spec.sandbox = box->linuxPlan.get();
  spec.launcher = programPath("pine-launch");
  pid_t pid = pine::spawnChild(spec);
  close(out[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = read(out[0], buf, sizeof buf)) > 0;) text.append(buf, (size_t)n);
  close(out[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status));
  std::map<std::string, std::string> results;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    auto colon = line.rfind(": ");
    if (colon != std::string::npos) results[line.substr(0, colon)] = line.substr(colon + 2);
  }
  return results;
}

}  // namespace

TEST_CASE("pine-egress in its sandbox: the request of its job, the secret filled in, redacted from the frames") {
  TestServer server(&tls().server);
  ProbeHome h;
  auto plan = egressPlanFor(programPath("pine-egress"), h.home);
  EgressRequest req;
  req.method = "POST";
  req.url = "https://127.0.0.1:" + std::to_string(server.port()) + "/echo?k=${secret:API_KEY}";
  req.headers = {{"Authorization", "Bearer ${secret:API_KEY}"}};
  req.body = "hello from the job";
  ProgramRun run = runProgram(programPath("pine-egress"), jobFor(req), &plan);
  CHECK(WIFEXITED(run.wait));
  CHECK(WEXITSTATUS(run.wait) == 0);
  REQUIRE_MESSAGE(run.done, run.error);
  CHECK(run.error.empty());
  CHECK(run.status == 200);
  CHECK(run.body.find("hello from the job") != std::string::npos);
  CHECK(run.body.find("Authorization: Bearer [redacted]") != std::string::npos);
  CHECK(run.body.find(kProgKey) == std::string::npos);
  REQUIRE(server.requests().size() == 1);
  CHECK(server.requests()[0].find("Bearer " + kProgKey) != std::string::npos);

  SUBCASE("a name the job carries no value for is reported by name; nothing is sent") {
    EgressRequest unknown;
    unknown.url = "https://127.0.0.1:" + std::to_string(server.port()) + "/echo";
    unknown.headers = {{"X-Key", "${secret:NOT_THERE}"}};
    ProgramRun r = runProgram(programPath("pine-egress"), jobFor(unknown), &plan);
    REQUIRE(r.done);
    CHECK(r.error.find("unknown secret NOT_THERE") != std::string::npos);
    CHECK(server.requests().size() == 1);
  }
}

TEST_CASE("pine-egress refuses a job pined did not write, with an error frame") {
  const std::string program = programPath("pine-egress");
  SUBCASE("bytes that are not a message") {
    ProgramRun r = runProgram(program, std::string(64, '\xff'), nullptr, true);
    CHECK(WEXITSTATUS(r.wait) == 2);
    REQUIRE(r.done);
    CHECK(r.error.find("the egress job could not be read") != std::string::npos);
  }
  SUBCASE("a message cut short") {
    EgressRequest req;
    req.url = "https://127.0.0.1:1/x";
    std::string job = jobFor(req);
    ProgramRun r = runProgram(program, job.substr(0, job.size() / 2), nullptr, true);
    CHECK(WEXITSTATUS(r.wait) == 2);
    CHECK(r.done);
    CHECK(r.error.find("the egress job could not be read") != std::string::npos);
  }
  SUBCASE("a segment table announcing more than a job may be") {
    std::string job(8, '\0');
    uint32_t words = (64u << 20) / 8;  // one segment of 64 MiB
    memcpy(&job[4], &words, 4);
    ProgramRun r = runProgram(program, job, nullptr, true);
    CHECK(WEXITSTATUS(r.wait) == 2);
    CHECK(r.done);
    CHECK(r.error.find("the egress job could not be read") != std::string::npos);
  }
  SUBCASE("nothing at all") {
    ProgramRun r = runProgram(program, "", nullptr, true);
    CHECK(WEXITSTATUS(r.wait) == 2);
  }
}

TEST_CASE("inside the egress sandbox: no pine home, no .env, no /etc beyond resolver and TLS files; network yes") {
  ProbeHome h;
  // A listening TCP socket and a unix socket on this machine.
  int tcp = pine::socketCloexec(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(tcp, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(listen(tcp, 4) == 0);
  socklen_t len = sizeof a;
  getsockname(tcp, reinterpret_cast<sockaddr*>(&a), &len);
  const std::string port = std::to_string(ntohs(a.sin_port));
  int ux = pine::socketCloexec(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un u{};
  u.sun_family = AF_UNIX;
  const std::string sock = h.dir + "/s.sock";
  strncpy(u.sun_path, sock.c_str(), sizeof u.sun_path - 1);
  REQUIRE(bind(ux, reinterpret_cast<sockaddr*>(&u), sizeof u) == 0);
  REQUIRE(listen(ux, 4) == 0);
  chmod(sock.c_str(), 0777);

  const std::vector<std::string> ops = {
      "read", h.home + "/.env", "list", h.home, "read", h.home + "/data/pine.db", "read", "/etc/shadow",
      "read", "/etc/passwd", "list", "/etc/ssl/private", "list", "/etc", "read", "/proc/self/environ",
      "write", h.dir + "/written", "write", "/tmp/pine-egress-probe-write",
      "read", "/etc/resolv.conf", "read", "/etc/hosts", "read", "/etc/nsswitch.conf",
      "read", "/etc/ssl/certs/ca-certificates.crt", "connect", port, "unix", sock, "exec", "/bin/true",
      "ids", "-"};
  const auto plan = egressPlanFor(pine::programDir() + "/egress-probe", h.home);
  auto got = probe(&plan, ops);
  for (const char* denied : {"read {home}/.env", "list {home}", "read {home}/data/pine.db", "read /etc/shadow",
                             "read /etc/passwd", "list /etc/ssl/private", "list /etc", "read /proc/self/environ",
                             "write {dir}/written", "write /tmp/pine-egress-probe-write", "unix {dir}/s.sock",
                             "exec /bin/true"}) {
    std::string key = denied;
    if (auto p = key.find("{home}"); p != std::string::npos) key.replace(p, 6, h.home);
    if (auto p = key.find("{dir}"); p != std::string::npos) key.replace(p, 5, h.dir);
    CAPTURE(key);
    REQUIRE(got.count(key) == 1);
    CHECK(got[key] != "ok");
  }
  for (const std::string& allowed : {std::string("read /etc/resolv.conf"), std::string("read /etc/hosts"),
                                     std::string("read /etc/nsswitch.conf"),
                                     std::string("read /etc/ssl/certs/ca-certificates.crt"), "connect " + port}) {
    CAPTURE(allowed);
    CHECK(got[allowed] == "ok");
  }
  CHECK_FALSE(std::filesystem::exists(h.dir + "/written"));
  if (geteuid() == 0) CHECK(got["ids -"].substr(0, 6) == "65534 ");  // never root: the workers' uid option

  SUBCASE("twin: the same uid without Landlock reads them, so the sandbox is what refuses") {
    auto open = plan;
    auto noLandlock = std::make_shared<pine::sandbox::LinuxPlan>(*plan.linuxPlan);
    noLandlock->landlock.abi = 0;
    open.linuxPlan = noLandlock;
    auto twin = probe(&open, {"read", h.home + "/.env", "read", h.home + "/data/pine.db", "list", "/etc", "exec",
                              "/bin/true"});
    CHECK(twin["read " + h.home + "/.env"] == "ok");
    CHECK(twin["exec /bin/true"] == "ok");
    CHECK(twin["read " + h.home + "/data/pine.db"] == "ok");
    CHECK(twin["list /etc"] == "ok");
  }
  close(tcp);
  close(ux);
}
