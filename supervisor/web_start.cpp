#include "supervisor/web_start.h"

#include <openssl/crypto.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "common/cloexec.h"
#include "common/log.h"
#include "supervisor/connector_spawn.h"
#include "supervisor/supervisor.h"

namespace pine {
namespace {

// Wiped however the start ends: the key's value is in it.
struct WipedText {
  std::string text;
  ~WipedText() { OPENSSL_cleanse(text.data(), text.size()); }
};

// The job is a few kilobytes: the socket's buffer takes it whole, before pine-web reads a byte.
void writeJob(int fd, const std::string& text) {
  size_t at = 0;
  while (at < text.size()) {
    ssize_t n = write(fd, text.data() + at, text.size() - at);  // pined ignores SIGPIPE
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error(std::string("cannot hand pine-web its job: ") + strerror(errno));
    at += static_cast<size_t>(n);
  }
}

}  // namespace

std::optional<std::string> webJobFor(const std::string& agent, const config::McpServer& s,
                                     const secrets::SecretStore& store, web::WebJob& job) {
  job.server = agent + "/" + s.name;
  job.allowHosts = s.allowHosts;
  job.denyHosts = s.denyHosts;
  job.allowPrivate = s.allowPrivate;
  if (s.searchUrl.empty()) return std::nullopt;
  auto key = store.get(s.searchKeySecret);
  if (!key)
    return "MCP server '" + s.name + "' of agent '" + agent + "': its search keySecret names " + s.searchKeySecret +
           ", which is not in .env: store it with `pinectl secret set " + s.searchKeySecret + "`";
  job.searchUrl = s.searchUrl;
  job.searchKeyName = s.searchKeySecret;
  job.searchKey = std::move(*key);
  return std::nullopt;
}

StartedProgram startWebServer(Supervisor& sup, kj::AsyncIoContext& io, const std::string& agent,
                              const config::McpServer& s) {
  const std::string name = agent + "/" + s.name;
  WipedText job;
  {
    web::WebJob spec;
    auto why = webJobFor(agent, s, sup.secrets(), spec);
    if (!why) job.text = web::encodeJob(spec);
    OPENSSL_cleanse(spec.searchKey.data(), spec.searchKey.size());
    if (why) throw std::runtime_error(*why);
  }
  const std::string program = connectorProgram("pine-web");
  int sv[2];
  if (socketpairCloexec(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
    throw std::runtime_error(std::string("socketpair: ") + strerror(errno));
  kj::AutoCloseFd brokerEnd(sv[0]), theirs(sv[1]);
  pid_t pid = 0;
  try {
    pid = spawnConnector(sup, program, theirs.get(), "web " + name);
  } catch (std::exception& e) {
    // Fail closed: without its sandbox the server does not run.
    audit("sandbox.refused", {{"process", "mcp"}, {"server", name}, {"reason", e.what()}});
    throw std::runtime_error("the bundled web server could not be started: " + std::string(e.what()));
  }
  theirs = nullptr;
  audit("process.start", {{"process", "mcp"}, {"process_pid", pid}, {"server", name}, {"program", program},
                          {"search", !s.searchUrl.empty()}});
  spdlog::info("mcp '{}': started pine-web (pid {})", name, pid);
  auto exit = sup.adoptSourceProgram(pid, name, "mcp");
  // First the job; only then is the socket the broker's (the bytes travel to pine-web, and the
  // broker's end cannot read back what it sent).
  writeJob(brokerEnd.get(), job.text);
  (void)io;
  return StartedProgram{pid, brokerEnd.release(), kj::mv(exit), kj::Promise<void>(kj::READY_NOW)};
}

}  // namespace pine
