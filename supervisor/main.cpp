// pined: the supervisor. Privileged and small: it prepares the home, keeps the
// broker running, starts workers for it, and stops everything on SIGTERM.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <iterator>

#include <openssl/crypto.h>

#include "common/fd.h"
#include "common/log.h"
#include "common/unix_socket.h"
#include "config/load.h"
#include "supervisor/backend_check.h"
#include "supervisor/home_layout.h"
#include "supervisor/secrets/secret_store.h"
#include "supervisor/admin_group.h"
#include "supervisor/supervisor.h"
#include "common/cloexec.h"
#include "common/version_flag.h"

namespace {

const char kUsage[] =
    "usage: pined [--home DIR] [--foreground] [--broker-program PATH] [--worker-program PATH]\n"
    "  --home DIR             pine's home (default: $PINE_HOME, else ~/.pine)\n"
    "  --foreground           stay attached and log to stderr too (for launchd, systemd, tests)\n"
    "  --broker-program PATH  the pine-broker to run (default: beside pined)\n"
    "  --worker-program PATH  the pine-worker to run (default: beside pined)\n"
    "  --egress-ca FILE       trust only this CA bundle for outgoing HTTPS (default: the system's)\n"
    "  --launcher-program PATH  the pine-launch that enters sandboxes (default: beside pined)\n"
    "  --broker-ids FIRST-LAST  as root: the range the broker's own uid and gid come from (default 60600-60699)\n"
    "  --worker-ids FIRST-LAST  as root: the range each agent's own worker uid and gid come from (default 60700-60999)\n"
    "  --sandbox-backend linux|seatbelt  what enforces the sandboxes (default: this system's own)\n"
    "  --sandbox-exec PATH    with seatbelt: the sandbox-exec to start programs under (default\n"
    "                         /usr/bin/sandbox-exec; tests give a stand-in that enforces nothing)\n"
    "  --admin-group NAME     members of NAME may use pine.sock and pined.sock and read the token and\n"
    "                         logs (pined must run as a service account in that group, not as root)\n"
    "  --set-secret NAME      while no pined runs on the home: store the value read from stdin in .env\n"
    "                         as a running pined would, and exit (pinectl secret set does this for you)\n";

// Detach from the terminal. The first process returns only once the broker is
// ready (or after a timeout), so `pined && pinectl status` works.
int daemonize(const pine::Home& home) {
  int ready[2];
  if (pine::pipeCloexec(ready) != 0) throw std::runtime_error(std::string("pipe: ") + strerror(errno));
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + strerror(errno));
  if (pid > 0) {
    close(ready[1]);
    struct pollfd p = {ready[0], POLLIN, 0};
    char ok = 0;
    bool answered = poll(&p, 1, 15000) == 1 && read(ready[0], &ok, 1) == 1;
    if (answered && ok == 2) {  // the broker could not start: why, and that pined keeps trying
      char buf[4096];
      ssize_t n;
      while (poll(&p, 1, 2000) == 1 && (n = read(ready[0], buf, sizeof buf)) > 0) std::cerr.write(buf, n);
      _exit(1);
    }
    if (answered && ok == 1) {
      // Then "pined started on HOME (pid N)" and any problems of the broker's, as one write.
      std::string said;
      char buf[4096];
      ssize_t n;
      while (poll(&p, 1, 2000) == 1 && (n = read(ready[0], buf, sizeof buf)) > 0) said.append(buf, (size_t)n);
      size_t first = said.find('\n');
      std::cout << (first == std::string::npos ? "pined started on " + home.root + "\n" : said.substr(0, first + 1));
      if (first != std::string::npos) std::cerr << said.substr(first + 1);
      _exit(0);
    }
    std::cerr << "pined: the broker did not become ready within 15 s; see " << home.logs() << "/\n";
    _exit(1);
  }
  close(ready[0]);
  setsid();
  if (fork() > 0) _exit(0);
  int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  int err = open((home.logs() + "/stderr.log").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  dup2(devnull, 0);
  dup2(devnull, 1);
  dup2(err >= 0 ? err : devnull, 2);
  return ready[1];
}

// `pined --set-secret NAME`: the owner's way to store a secret before the configuration that names
// it can start pined (pinectl secret set runs it when no pined answers). The same writer as a
// running pined's (SecretStore: atomic, mode 600, never a link); the home's lock keeps a running
// pined's .env from being written behind its back.
int setSecretOffline(const pine::Home& home, const std::string& name) {
  pine::prepareHome(home);
  int lock = pine::lockHome(home);  // throws "another pined already runs on ..."
  std::string value(std::istreambuf_iterator<char>(std::cin), {});
  if (!value.empty() && value.back() == '\n') value.pop_back();
  if (!value.empty() && value.back() == '\r') value.pop_back();
  if (value.empty()) {
    std::cerr << "pined: an empty value is not stored; nothing changed\n";
    return 1;
  }
  pine::secrets::SecretStore store(home.root + "/.env");
  for (auto& e : store.load()) std::cerr << "pined: " << e << "\n";
  if (std::string problem = pine::config::secretValueProblem(home.root, store.names(), name, value.size());
      !problem.empty()) {
    OPENSSL_cleanse(value.data(), value.size());
    std::cerr << "pined: not stored; .env is unchanged: " << problem << "\n";
    return 1;
  }
  try {
    store.set(name, value);
  } catch (...) {
    OPENSSL_cleanse(value.data(), value.size());
    throw;
  }
  OPENSSL_cleanse(value.data(), value.size());
  pine::setupAudit(home.audit());
  pine::audit("secret.set", {{"name", name}, {"by", "pinectl, pined not running"}});
  close(lock);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (pine::printedVersion(argc, argv, "pined")) return 0;
  std::string homeFlag, brokerProgram, workerProgram, launcherProgram, adminGroup, setSecret;
  bool foreground = false;
  pine::SupervisorOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "pined: " << a << " needs a value\n" << kUsage;
        exit(2);
      }
      return argv[++i];
    };
    if (a == "--home") homeFlag = value();
    else if (a == "--foreground") foreground = true;
    else if (a == "--broker-program") brokerProgram = value();
    else if (a == "--worker-program") workerProgram = value();
    else if (a == "--egress-ca") options.egressCaFile = pine::absolutePath(value());
    else if (a == "--launcher-program") launcherProgram = value();
    else if (a == "--broker-ids" || a == "--worker-ids") {
      std::string v = value();
      unsigned long first = 0, last = 0;
      char dash = 0;
      if (sscanf(v.c_str(), "%lu%c%lu", &first, &dash, &last) != 3 || dash != '-' || first == 0 || last < first ||
          last > 0xfffffffeUL) {
        std::cerr << "pined: " << a << " " << v << ": write FIRST-LAST, two uids from 1 up, FIRST <= LAST\n";
        return 2;
      }
      (a == "--broker-ids" ? options.sandbox.brokerIdFirst : options.sandbox.workerIdFirst) = (uid_t)first;
      (a == "--broker-ids" ? options.sandbox.brokerIdLast : options.sandbox.workerIdLast) = (uid_t)last;
    }
    else if (a == "--sandbox-backend") {
      auto b = pine::sandbox::parseBackend(value());
      if (!b) {
        std::cerr << "pined: --sandbox-backend takes linux or seatbelt\n";
        return 2;
      }
      options.backend.backend = *b;
    } else if (a == "--sandbox-exec") {
      options.backend.sandboxExec = value();
    } else if (a == "--admin-group") {
      adminGroup = value();
    } else if (a == "--set-secret") {
      setSecret = value();
    } else if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      return 0;
    } else {
      std::cerr << "pined: unknown argument '" << a << "'\n" << kUsage;
      return 2;
    }
  }
  if (options.sandbox.brokerIdFirst <= options.sandbox.workerIdLast &&
      options.sandbox.workerIdFirst <= options.sandbox.brokerIdLast) {
    std::cerr << "pined: the broker's ids (--broker-ids) and the workers' (--worker-ids) overlap; give them "
                 "ranges of their own\n";
    return 2;
  }
  umask(077);

  try {
    options.home.root = pine::resolveHome(homeFlag);
    if (!setSecret.empty()) return setSecretOffline(options.home, setSecret);
    std::string dir = pine::programDir();
    options.brokerProgram = pine::absolutePath(brokerProgram.empty() ? dir + "/pine-broker" : brokerProgram);
    options.workerProgram = pine::absolutePath(workerProgram.empty() ? dir + "/pine-worker" : workerProgram);
    options.launcherProgram = pine::absolutePath(launcherProgram.empty() ? dir + "/pine-launch" : launcherProgram);
    for (auto& prog : {options.brokerProgram, options.workerProgram, options.launcherProgram})
      if (access(prog.c_str(), X_OK) != 0) throw std::runtime_error("cannot execute " + prog + ": " + strerror(errno));
    pine::prepareHome(options.home);
    pine::lockHome(options.home);  // held until exit
    auto loaded = pine::config::loadHome(options.home.root);
    if (!loaded.ok()) {
      std::cerr << "pined: the configuration in " << options.home.root
                << " does not validate; nothing was started:\n"
                << loaded.formatErrors();
      return 2;
    }
    pine::ensureControlToken(options.home);
    if (!adminGroup.empty()) {
      options.admin = pine::resolveAdminGroup(adminGroup);
      pine::setSocketAccess(*options.admin);
      pine::shareHomeWithAdmins(options.home, *options.admin->adminGid);
    }
    if (options.backend.backend == pine::sandbox::Backend::Seatbelt) {
      // Fail closed, at start: sandbox-exec must be there and accept pine's profiles.
      try {
        pine::checkSeatbeltBackend(options.backend);
      } catch (std::exception& e) {
        pine::setupAudit(options.home.audit());
        pine::audit("sandbox.refused", {{"process", "pined"}, {"backend", "seatbelt"}, {"reason", e.what()}});
        throw;
      }
    }
    // As root, the broker gets a uid of its own, checked unused now (no account, group or process).
    if (geteuid() == 0)
      options.brokerIds = pine::sandbox::pickBrokerIds(options.sandbox.brokerIdFirst, options.sandbox.brokerIdLast,
                                                       options.home.data());
    options.foreground = foreground;
    if (!foreground) options.readyFd = daemonize(options.home);
    pine::writeFileAtomic(options.home.pidFile(), std::to_string(getpid()) + "\n", 0600);
  } catch (std::exception& e) {
    std::cerr << "pined: " << e.what() << "\n";
    return 1;
  }

  pine::setupLogging("pined", options.home.logFile("pined"), foreground);
  pine::setupAudit(options.home.audit());
  signal(SIGPIPE, SIG_IGN);
  kj::UnixEventPort::captureSignal(SIGTERM);
  kj::UnixEventPort::captureSignal(SIGINT);
  kj::UnixEventPort::captureSignal(SIGHUP);
  kj::UnixEventPort::captureChildExit();
  auto io = kj::setupAsyncIo();
  // KJ runs ready events without looking at the other descriptors until none is left: a peer that
  // never lets its stream run dry (a flooding command, a fast publisher) would starve the rest.
  io.waitScope.setBusyPollInterval(256);
  pine::Supervisor supervisor(io, options);
  supervisor.run().wait(io.waitScope);
  unlink(options.home.pidFile().c_str());
  unlink(options.home.ownerSocket().c_str());
  unlink(options.home.socket().c_str());
  unlink(options.home.socket().c_str());  // the broker's: it may not remove anything in the home itself
  spdlog::info("pined stopped");
  return 0;
}
