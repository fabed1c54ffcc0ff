#include "browser/chromium.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "common/cloexec.h"

namespace pine::browser {

std::vector<std::string> chromiumArgs(const std::string& program, const std::string& profileDir, int proxyPort) {
  const std::string proxy = "127.0.0.1:" + std::to_string(proxyPort);
  return {program,
          "--headless=new",
          "--remote-debugging-pipe",
          "--user-data-dir=" + profileDir,
          "--no-first-run",
          "--no-default-browser-check",
          "--disable-sync",
          "--disable-extensions",
          "--disable-component-extensions-with-background-pages",
          "--disable-default-apps",
          "--disable-background-networking",
          "--disable-component-update",
          "--disable-domain-reliability",
          "--disable-client-side-phishing-detection",
          "--no-pings",
          "--allow-browser-signin=false",
          // Calls home Chromium makes on its own (updates, sign-in, hints, translation): not the
          // agent's, and refused by the proxy anyway unless allowed.
          "--disable-features=OptimizationHints,Translate,MediaRouter,DialMediaRouteProvider,"
          "AutofillServerCommunication,CertificateTransparencyComponentUpdater,InterestFeedContentSuggestions",
          "--disable-breakpad",
          "--disable-crash-reporter",
          "--disable-quic",
          "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
          "--webrtc-ip-handling-policy=disable_non_proxied_udp",
          "--password-store=basic",
          "--use-mock-keychain",
          "--mute-audio",
          "--hide-scrollbars",
          "--window-size=1280,900",
          // Every request through the proxy, loopback included: it checks where each one goes.
          "--proxy-server=http://" + proxy,
          "--proxy-bypass-list=<-loopback>",
          // Chromium resolves no name itself (the proxy does, and checks the answer): no lookup
          // leaks a page's data in a DNS query, and no preconnect goes around the proxy.
          "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
          "--log-level=3",
          "about:blank"};
}

std::vector<std::string> chromiumEnv(const std::string& profileDir, const std::string& tmpDir) {
  return {"HOME=" + profileDir, "XDG_CONFIG_HOME=" + profileDir + "/.config",
          "XDG_CACHE_HOME=" + profileDir + "/.cache", "TMPDIR=" + tmpDir, "LANG=C.UTF-8"};
}

namespace {

std::vector<char*> cstrings(const std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

}  // namespace

ChromiumProcess startChromium(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  int in[2], out[2];  // in: we write, Chromium reads (its 3); out: Chromium writes (its 4), we read
  if (pipeCloexec(in) != 0) throw std::runtime_error(std::string("pipe: ") + strerror(errno));
  if (pipeCloexec(out) != 0) {
    close(in[0]);
    close(in[1]);
    throw std::runtime_error(std::string("pipe: ") + strerror(errno));
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, 2, 1);  // its stdout joins its stderr: pined's log
  posix_spawn_file_actions_adddup2(&fa, in[0], 3);
  posix_spawn_file_actions_adddup2(&fa, out[1], 4);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setsigmask(&attr, &none);
  auto argv = cstrings(args);
  auto envp = cstrings(env);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, args[0].c_str(), &fa, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  close(in[0]);
  close(out[1]);
  if (rc != 0) {
    close(in[1]);
    close(out[0]);
    throw std::runtime_error("cannot start Chromium (" + args[0] + "): " + strerror(rc));
  }
  return {pid, in[1], out[0]};
}

void stopChromium(ChromiumProcess& p) {
  if (p.pid <= 0) return;
  kill(-p.pid, SIGKILL);
  kill(p.pid, SIGKILL);
  int st;
  while (waitpid(p.pid, &st, 0) < 0 && errno == EINTR) {
  }
  p.pid = -1;
  if (p.commands >= 0) close(p.commands);
  if (p.events >= 0) close(p.events);
  p.commands = p.events = -1;
}

}  // namespace pine::browser
