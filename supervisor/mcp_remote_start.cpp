#include "supervisor/mcp_remote_start.h"

#include <openssl/crypto.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "common/cloexec.h"
#include "common/log.h"
#include "mcp_remote/job/remote_job.h"
#include "supervisor/connector_spawn.h"
#include "supervisor/mcp_server.h"
#include "supervisor/spawn.h"
#include "supervisor/supervisor.h"

namespace pine {

std::optional<std::map<std::string, std::string>> mcpRemoteHeaders(
    const std::map<std::string, std::string>& headers,
    const std::function<std::optional<std::string>(const std::string&)>& secret, std::string& why,
    std::vector<std::string>* used) {
  std::map<std::string, std::string> out;
  for (const auto& [name, value] : headers) {
    std::string missing;
    auto filled = mcpFillSecrets(value, secret, missing, used);
    if (!filled) {
      why = "header " + name + " names the secret " + missing + ", which is not in .env (pinectl secret set " + missing + ")";
      return std::nullopt;
    }
    if (filled->find_first_of(std::string("\r\n\0", 3)) != std::string::npos) {
      OPENSSL_cleanse(filled->data(), filled->size());
      why = "header " + name + " would hold a line break or a NUL byte";  // never the value itself
      return std::nullopt;
    }
    out[name] = std::move(*filled);
  }
  return out;
}

StartedProgram startMcpRemote(Supervisor& sup, kj::AsyncIoContext& io, const std::string& agent,
                              const std::string& server, const config::McpServer& entry) {
  (void)io;
  const std::string label = agent + "/" + server;
  mcp_remote::RemoteJob job;
  job.name = label;
  job.url = entry.url;
  std::string why;
  auto& secrets = sup.secrets();
  auto headers =
      mcpRemoteHeaders(entry.headers, [&](const std::string& n) { return secrets.get(n); }, why, &job.secrets);
  if (!headers) throw std::runtime_error("MCP server '" + server + "' of agent '" + agent + "': " + why);
  job.headers = std::move(*headers);
  std::string bytes = encodeJob(job);
  for (auto& [name, value] : job.headers) OPENSSL_cleanse(value.data(), value.size());
  for (auto& value : job.secrets) OPENSSL_cleanse(value.data(), value.size());
  struct Wipe {
    std::string& s;
    ~Wipe() { OPENSSL_cleanse(s.data(), s.size()); }
  } wipe{bytes};

  // Installed beside pined (not beside the worker program, which tests replace).
  const std::string beside = defaultLauncher();
  const std::string program = beside.substr(0, beside.find_last_of('/')) + "/pine-mcp-remote";
  int sv[2];
  if (socketpairCloexec(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
    throw std::runtime_error(std::string("socketpair: ") + strerror(errno));
  kj::AutoCloseFd ours(sv[0]), theirs(sv[1]);
  pid_t pid = 0;
  try {
    pid = spawnConnector(sup, program, theirs.get(), "mcp " + label);
  } catch (std::exception& e) {
    audit("sandbox.refused", {{"process", "mcp"}, {"server", label}, {"reason", e.what()}});
    throw std::runtime_error("MCP server '" + server + "' of agent '" + agent +
                             "': its connector pine-mcp-remote could not be started: " + e.what());
  }
  theirs = nullptr;
  audit("process.start", {{"process", "mcp"}, {"process_pid", pid}, {"server", label}, {"url", entry.url}});
  spdlog::info("MCP server '{}': started pine-mcp-remote for {} (pid {})", label, entry.url, pid);
  auto exit = sup.adoptSourceProgram(pid, label, "mcp");
  // The job is small (the socket's buffer holds it): written whole before the broker gets the socket.
  size_t at = 0;
  while (at < bytes.size()) {
    ssize_t n = ::write(ours.get(), bytes.data() + at, bytes.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      sup.killChild(pid, "mcp");
      throw std::runtime_error("MCP server '" + server + "': cannot write the job to pine-mcp-remote: " + strerror(errno));
    }
    at += static_cast<size_t>(n);
  }
  // Its stderr is pined's (as pine-mqtt's): nothing to copy.
  return StartedProgram{pid, ours.release(), kj::mv(exit), kj::Promise<void>(kj::READY_NOW)};
}

}  // namespace pine
