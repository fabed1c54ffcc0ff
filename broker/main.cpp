// pine-broker: started by pined with its link on fd 3. Unprivileged; decides
// what every run may do, and serves the owner's control API.
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <iostream>
#include <kj/async-unix.h>

#include "broker/broker.h"
#include "common/fd.h"
#include "common/log.h"
#include "common/unix_socket.h"
#include "sandbox/no_exec.h"
#include "redact/redactor.h"
#include "common/version_flag.h"

int main(int argc, char** argv) {
  if (pine::printedVersion(argc, argv, "pine-broker")) return 0;
  // A pledge without exec: the broker never starts a program (pined starts every process).
  if (int e = pine::sandbox::forbidExec()) {
    std::cerr << "pine-broker: cannot give up exec: " << strerror(e) << "\n";
    return 1;
  }
  std::string homeDir, bootId, sandboxNote;
  bool logStderr = false;
  pine::SocketAccess access{getuid(), std::nullopt, ""};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--home" && i + 1 < argc) homeDir = argv[++i];
    else if (a == "--log-stderr") logStderr = true;
    else if (a == "--boot-id" && i + 1 < argc) bootId = argv[++i];  // pined's start: a restart of the broker alone keeps grants
    else if (a == "--sandbox-note" && i + 1 < argc) sandboxNote = argv[++i];  // told to the owner once per pined start
    else if (a == "--owner-uid" && i + 1 < argc) access.ownerUid = (uid_t)std::stoul(argv[++i]);
    else if (a == "--admin-group" && i + 1 < argc) {  // NAME:GID, resolved by pined
      std::string v = argv[++i];
      auto colon = v.rfind(':');
      if (colon == std::string::npos || colon == 0) {
        std::cerr << "pine-broker: --admin-group takes NAME:GID\n";
        return 2;
      }
      access.adminName = v.substr(0, colon);
      access.adminGid = (gid_t)std::stoul(v.substr(colon + 1));
    }
    else {
      std::cerr << "pine-broker: unknown argument '" << a << "' (pine-broker is started by pined)\n";
      return 2;
    }
  }
  if (homeDir.empty() || fcntl(3, F_GETFD) < 0) {
    std::cerr << "pine-broker is started by pined, with --home DIR and its link on fd 3\n";
    return 2;
  }
  pine::setSocketAccess(access);
  umask(077);
  // Event batches free and reallocate the same amount over and over: do not hand it back each time.
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
  pine::setCloexec(3, true);  // nothing the broker might start inherits its link to pined
  pine::Home home{homeDir};
  pine::setupLogging("broker", home.logFile("broker"), logStderr);
  pine::setupAudit(home.audit());
  // The broker holds no secrets, but outside content may carry secret-shaped strings: keep them out of logs.
  auto patterns = std::make_shared<const pine::redact::Redactor>(std::vector<std::string>{});
  pine::setLogFilter([patterns](std::string_view line) { return patterns->redact(line); },
                     [patterns](std::string_view line) { return patterns->redact(line, pine::redact::Format::kJson); });
  signal(SIGPIPE, SIG_IGN);
  kj::UnixEventPort::captureSignal(SIGTERM);
  try {
    auto io = kj::setupAsyncIo();
    // KJ runs ready events without looking at the other descriptors until none is left: a peer that
    // never lets its stream run dry (a flooding command, a fast publisher) would starve the rest.
    io.waitScope.setBusyPollInterval(256);
    pine::Broker broker(io, home, bootId, sandboxNote);
    auto term = io.unixEventPort.onSignal(SIGTERM).then([&broker](siginfo_t) { broker.stop(); }).eagerlyEvaluate(nullptr);
    broker.run().wait(io.waitScope);
  } catch (std::exception& e) {
    spdlog::critical("broker: {}", e.what());
    return 1;
  } catch (kj::Exception& e) {
    spdlog::critical("broker: {}", e.getDescription().cStr());
    return 1;
  }
  spdlog::info("broker stopped");
  return 0;
}
