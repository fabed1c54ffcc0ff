#include "supervisor/browser_start.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "browser/job/browser_job.h"
#include "common/cloexec.h"
#include "common/fd.h"
#include "common/log.h"
#include "sandbox/policy.h"
#include "supervisor/connector_spawn.h"
#include "supervisor/egress_call.h"
#include "supervisor/supervisor.h"

namespace pine {
namespace {

void makeDir(const std::string& path) {
  if (mkdir(path.c_str(), 0700) != 0 && errno != EEXIST)
    throw std::runtime_error("cannot create " + path + ": " + strerror(errno));
}


}  // namespace

std::string findChromium() {
  for (const char* p : {"/usr/lib/chromium/chromium", "/usr/lib/chromium-browser/chromium-browser",
                        "/Applications/Chromium.app/Contents/MacOS/Chromium"})
    if (access(p, X_OK) == 0) return p;
  return "";
}

StartedProgram startBrowserServer(Supervisor& sup, const std::string& agent, const config::McpServer& s) {
  const std::string name = agent + "/" + s.name;
  const std::string home = sup.home().root;
  const std::string chromium = findChromium();
  if (chromium.empty())
    throw std::runtime_error("the bundled browser server needs Chromium, which is not installed (scripts/setup "
                             "installs Debian's chromium package)");
  const auto& host = sup.sandboxHost();
  const sandbox::SandboxIds ids = host.agentIds(home, agent);  // as root: the agent's own uid
  // Its own folder for fresh profiles, or the named persistent profile; never in a workspace.
  std::vector<std::string> own;
  std::string dataRel;
  if (s.profile.empty()) {
    makeDir(home + "/browser");
    makeDir(home + "/browser/" + agent);
    dataRel = "browser/" + agent + "/" + s.name;
    own = {"browser/" + agent, dataRel};
  } else {
    // A folder name of pine's home: nothing that could leave browser-profiles/.
    if (s.profile.size() > 64 || s.profile.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != std::string::npos ||
        s.profile[0] == '-')
      throw std::runtime_error("MCP server '" + s.name + "' of agent '" + agent + "': profile '" + s.profile +
                               "' must be a name of letters, digits, '_' and '-' (at most 64), e.g. shopping");
    makeDir(home + "/browser-profiles");
    dataRel = "browser-profiles/" + s.profile;
    own = {dataRel};
  }
  makeDir(home + "/" + dataRel);
  const std::string workspace = home + "/agents/" + agent + "/workspace";
  const std::string shots = workspace + "/screenshots";
  // The workspace as the agent's sandbox makes it (and hands it over, as root), in case no task
  // of the agent has run yet; screenshots/ in it is the one folder of it pine-browser writes.
  makeDir(home + "/agents");
  makeDir(home + "/agents/" + agent);
  makeDir(workspace);
  makeDir(shots);
  own.push_back("agents/" + agent + "/workspace");
  own.push_back("agents/" + agent + "/workspace/screenshots");
  host.handOverAgentFolders(home, own, {}, ids);

  browser::BrowserJob job;
  job.server = name;
  job.allowHosts = s.allowHosts;
  job.denyHosts = s.denyHosts;
  job.allowPrivate = s.allowPrivate;
  job.chromium = chromium;
  job.dataDir = home + "/" + dataRel;
  job.persistent = !s.profile.empty();
  job.screenshots = shots;
  job.screenshotsShown = "screenshots";
  const std::string program = connectorProgram("pine-browser");
  sandbox::PreparedSandbox box;
  try {
    sandbox::BrowserPaths paths;
    paths.egress = egressPaths(program, home);
    paths.chromium = chromium;
    paths.dataDir = job.dataDir;
    paths.screenshots = job.screenshots;
    box.policy = sandbox::browserPolicy(paths);
    box.cwd = "/";
    sandbox::LaunchParams launch;
    launch.cwd = "/";
    launch.ids = ids;
    launch.maskHome = home;  // an empty folder over /run (browserPolicy's hidden roots)
    launch.seatbelt = sandbox::SeatbeltOptions{false, false, true};
    host.launch(box, launch);
  } catch (std::exception& e) {
    audit("sandbox.refused", {{"process", "mcp"}, {"server", name}, {"reason", e.what()}});
    throw std::runtime_error("the bundled browser server could not be started: " + std::string(e.what()));
  }
  int sv[2];
  if (socketpairCloexec(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
    throw std::runtime_error(std::string("socketpair: ") + strerror(errno));
  kj::AutoCloseFd brokerEnd(sv[0]), theirs(sv[1]);
  pid_t pid = 0;
  try {
    pid = spawnConnectorIn(sup, box, program, theirs.get(), "browser " + name);
  } catch (std::exception& e) {
    // Fail closed: without its sandbox the server does not run.
    audit("sandbox.refused", {{"process", "mcp"}, {"server", name}, {"reason", e.what()}});
    throw std::runtime_error("the bundled browser server could not be started: " + std::string(e.what()));
  }
  theirs = nullptr;
  audit("process.start", {{"process", "mcp"}, {"process_pid", pid}, {"server", name}, {"program", program},
                          {"profile", s.profile}});
  spdlog::info("mcp '{}': started pine-browser (pid {})", name, pid);
  auto exit = sup.adoptSourceProgram(pid, name, "mcp");
  // The job is small: the socket's buffer takes it whole (pined ignores SIGPIPE).
  const std::string text = browser::encodeJob(job);
  if (!writeAll(brokerEnd.get(), text.data(), text.size()))
    throw std::runtime_error(std::string("cannot hand pine-browser its job: ") + strerror(errno));
  return StartedProgram{pid, brokerEnd.release(), kj::mv(exit), kj::Promise<void>(kj::READY_NOW)};
}

}  // namespace pine
