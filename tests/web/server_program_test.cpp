// pine-web as a program (PINE_BIN_DIR/pine-web, unsandboxed here: the sandboxed start is
// tests/integration/web_test.cpp): its job as the first line on fd 3, then MCP on the same
// socket; a slow fetch does not hold up a ping; bytes that are not JSON-RPC get an error answer
// and the server keeps serving; it exits when the socket closes.
#include <doctest/doctest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/cloexec.h"
#include "tests/sources/page_server.h"
#include "web/job/web_job.h"

using pine::sources::test::PageReply;
using pine::sources::test::PageRequest;
using pine::sources::test::PageServer;

namespace {

struct WebProcess {
  pid_t pid = -1;
  int fd = -1;
  std::string pending;

  explicit WebProcess(const std::string& jobLine) {
    signal(SIGPIPE, SIG_IGN);  // the server may be gone before its job is written
    int sv[2];
    REQUIRE(pine::socketpairCloexec(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    const char* dir = std::getenv("PINE_BIN_DIR");
    REQUIRE(dir != nullptr);
    std::string program = std::string(dir) + "/pine-web";
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, sv[1], 3);
    char* argv[] = {program.data(), nullptr};
    char* envp[] = {nullptr};
    REQUIRE(posix_spawn(&pid, program.c_str(), &fa, nullptr, argv, envp) == 0);
    posix_spawn_file_actions_destroy(&fa);
    close(sv[1]);
    fd = sv[0];
    send(jobLine);
  }
  ~WebProcess() {
    if (fd >= 0) close(fd);
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
  // The wait status once it exits (5 s at most; -1 when it did not).
  int reap() {
    int status = 0;
    for (int i = 0; i < 100; ++i) {
      if (waitpid(pid, &status, WNOHANG) == pid) {
        pid = -1;
        return status;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return -1;
  }
  void send(const std::string& s) { REQUIRE(write(fd, s.data(), s.size()) == static_cast<ssize_t>(s.size())); }
  // The next line within `ms`, or "" when none came.
  std::string line(int ms = 10000) {
    auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    for (;;) {
      auto nl = pending.find('\n');
      if (nl != std::string::npos) {
        std::string l = pending.substr(0, nl);
        pending.erase(0, nl + 1);
        return l;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now()).count();
      if (left <= 0) return "";
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left)) <= 0) return "";
      char buf[65536];
      ssize_t n = read(fd, buf, sizeof buf);
      if (n <= 0) return "";
      pending.append(buf, static_cast<size_t>(n));
    }
  }
  nlohmann::json message(int ms = 10000) { return nlohmann::json::parse(line(ms), nullptr, false); }
};

}  // namespace

TEST_CASE("pine-web: job first, then MCP; a slow fetch does not hold up a ping; garbage answered; exits on close") {
  PageServer server([](const PageRequest& r) {
    if (r.path == "/slow") std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    return PageReply{200, {{"Content-Type", "text/plain"}}, "slow page"};
  });
  pine::web::WebJob job;
  job.allowPrivate = true;
  WebProcess web(pine::web::encodeJob(job));
  web.send(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}})" "\n");
  auto init = web.message();
  CHECK(init["result"]["serverInfo"]["name"] == "pine-web");
  web.send(R"({"jsonrpc":"2.0","method":"notifications/initialized"})" "\n");
  web.send(R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fetch","arguments":{"url":"http://127.0.0.1:)" +
           std::to_string(server.port()) + R"(/slow"}}})" "\n");
  web.send(R"({"jsonrpc":"2.0","id":3,"method":"ping"})" "\n");
  auto first = web.message();
  CAPTURE(first.dump());
  CHECK(first["id"] == 3);  // the ping, while the fetch waits on the page
  auto second = web.message();
  CAPTURE(second.dump());
  CHECK(second["id"] == 2);
  CHECK(second["result"]["isError"] == false);
  CHECK(second["result"]["content"][0]["text"].get<std::string>().find("slow page") != std::string::npos);

  web.send("this is not json\n");
  CHECK(web.message()["error"]["code"] == -32700);
  web.send(R"({"jsonrpc":"2.0","id":4,"method":"tools/list"})" "\n");
  auto list = web.message();
  REQUIRE(list["result"]["tools"].size() == 1);  // no search configured
  CHECK(list["result"]["tools"][0]["name"] == "fetch");

  close(web.fd);
  web.fd = -1;
  int status = web.reap();
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("pine-web: without a job it says so and exits") {
  WebProcess web("not a job\n");
  int status = web.reap();
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 2);
}
