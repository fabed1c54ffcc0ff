// Attacks on the Linux backend through the real path: agentPolicy ->
// buildLinuxPlan -> writeLaunchPlan -> fork -> exec pine-launch (plan on fd 4,
// report on fd 5) -> enterSandboxAndExec -> execve(sandbox-probe).
// Every attack has a legitimate twin that must work, so a refusal proves the
// boundary and not a broken fixture. Secrets in the fixture are world-readable
// (0644 in 0755 folders): only the sandbox stands between them and the worker.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <grp.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "sandbox/linux/enter.h"
#include "sandbox/linux/launch_plan.h"
#include "sandbox/linux/owned_tree.h"
#include "sandbox/policy.h"

namespace fs = std::filesystem;
using namespace pine::sandbox;

namespace {

const Probe* gProbeOverride = nullptr;  // the unprivileged-supervisor test probes as itself

const Probe& kernel() {
  static Probe p = probeKernel();
  return gProbeOverride ? *gProbeOverride : p;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void writeText(const std::string& path, const std::string& text, mode_t mode = 0644) {
  std::ofstream(path) << text;
  chmod(path.c_str(), mode);
}

// A fake pine installation in a temp folder.
struct Fixture {
  std::string root, home, pine, ws, bws, priv, tmp, prog, probe, launcher, outside;
  AgentPaths paths;
  int tcpListener = -1, unixListener = -1, abstractListener = -1;
  int tcpPort = 0;
  std::string unixPath, abstractName;

  Fixture() {
    char tmpl[] = "/tmp/pine-sbx-XXXXXX";
    root = mkdtemp(tmpl);
    chmod(root.c_str(), 0755);
    home = root + "/home/owner";
    pine = home + "/.pine";
    ws = pine + "/agents/a/workspace";
    bws = pine + "/agents/b/workspace";
    priv = pine + "/sandbox/a";
    tmp = pine + "/sandbox/a/tmp";
    prog = root + "/prog";
    outside = root + "/outside";
    for (auto d : {ws, bws, tmp, pine + "/agents/a/skills", pine + "/docs", pine + "/data", home + "/.ssh", prog,
                   outside})
      fs::create_directories(d);
    for (auto& e : fs::recursive_directory_iterator(root))
      if (e.is_directory()) chmod(e.path().c_str(), 0755);
    mkdir((root + "/mask").c_str(), 0);
    close(open((root + "/mask-file").c_str(), O_WRONLY | O_CREAT, 0));
    writeText(home + "/.ssh/id_rsa", "-----BEGIN OPENSSH PRIVATE KEY-----\n");
    writeText(pine + "/.env", "TELEGRAM_TOKEN=secret\n");
    writeText(pine + "/agents/a/AGENTS.md", "rules the agent must never change\n");
    writeText(pine + "/pine.yaml", "http:\n  port: 7433\n");
    writeText(pine + "/agents/a/skills/SKILL.md", "a skill\n");
    writeText(pine + "/docs/manual.md", "the manual\n");
    writeText(bws + "/secret.txt", "agent b's notes\n");
    writeText(outside + "/secret", "outside\n");
    // Owned by the worker's uid, so that only the sandbox (not protected_hardlinks) stops a hard link to it.
    writeText(outside + "/workers-own", "outside, owned by the worker uid\n");
    if (geteuid() == 0 && chown((outside + "/workers-own").c_str(), 65534, 65534) != 0) FAIL("chown");
    writeText(ws + "/hello.txt", "hello\n");
    fs::create_directories(ws + "/d1");
    // The probe, as pine's program files would be installed; and a setuid-root copy of it.
    const char* built = getenv("PINE_SANDBOX_PROBE");
    REQUIRE_MESSAGE(built, "PINE_SANDBOX_PROBE must name the sandbox-probe program");
    probe = prog + "/sandbox-probe";
    fs::copy_file(built, probe);
    chmod(probe.c_str(), 0755);
    fs::copy_file(built, prog + "/probe-suid");
    chmod((prog + "/probe-suid").c_str(), 04755);
    // pine-launch beside it, as it is installed beside pined.
    const char* builtLauncher = getenv("PINE_LAUNCHER");
    REQUIRE_MESSAGE(builtLauncher, "PINE_LAUNCHER must name the pine-launch program");
    launcher = prog + "/pine-launch";
    fs::copy_file(builtLauncher, launcher);
    chmod(launcher.c_str(), 0755);

    paths.agentId = "a";
    paths.pineHome = pine;
    paths.userHome = home;
    paths.workspace = ws;
    paths.privateHome = priv;
    paths.tmpdir = tmp;
    paths.skills = {pine + "/agents/a/skills"};
    paths.docs = pine + "/docs";
    paths.programDir = prog;
    if (geteuid() == 0) handOverToWorker(root, {ws.substr(root.size() + 1), priv.substr(root.size() + 1),
                                                tmp.substr(root.size() + 1)}, 65534, 65534);
    // The broker's data/, owned by the uid the broker cases run as (the worker uid here).
    if (geteuid() == 0 && chown((pine + "/data").c_str(), 65534, 65534) != 0) FAIL("chown data");

    // Things to reach: a TCP listener on the host's loopback, a pathname and an abstract unix socket.
    tcpListener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof sa;
    REQUIRE(bind(tcpListener, (sockaddr*)&sa, len) == 0);
    REQUIRE(listen(tcpListener, 16) == 0);
    getsockname(tcpListener, (sockaddr*)&sa, &len);
    tcpPort = ntohs(sa.sin_port);
    unixPath = outside + "/broker.sock";
    unixListener = listenUnix(unixPath, false);
    chmod(unixPath.c_str(), 0777);
    abstractName = "pine-sbx-" + std::to_string(getpid());
    abstractListener = listenUnix(abstractName, true);
  }

  static int listenUnix(const std::string& name, bool abstract) {
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    socklen_t len = sizeof sa;
    if (abstract) {
      memcpy(sa.sun_path + 1, name.data(), name.size());
      len = (socklen_t)(offsetof(sockaddr_un, sun_path) + 1 + name.size());
    } else {
      memcpy(sa.sun_path, name.data(), name.size());
    }
    REQUIRE(bind(s, (sockaddr*)&sa, len) == 0);
    REQUIRE(listen(s, 16) == 0);
    return s;
  }

  ~Fixture() {
    close(tcpListener);
    close(unixListener);
    close(abstractListener);
    std::error_code ec;
    fs::remove_all(root, ec);
  }
};

Fixture& fx() {
  static Fixture f;
  return f;
}

struct Opt {
  bool tainted = false;
  Network net = Network::None;
  bool namespaces = true;
  Grants grants;
  bool control = false;  // no sandbox at all, only the uid drop: proves the fixture, not the sandbox
  bool masks = false;    // hide denied paths inside readable trees with mode-000 binds, as pined does
  std::vector<std::string> extraRead = {}, extraDenyRead = {};  // added to the agent's policy
  std::string cwd = {};  // set: the plan's working directory instead of the workspace
  bool broker = false;   // the broker's policy (brokerPolicy) for the fake home, the probe as its program
  std::vector<int> brokerConnect = {};  // TCP ports the broker may connect to
  bool userNamespaces = false;  // the filter option pine-browser's policy sets (Chromium's own sandbox)
};

struct Result {
  int exit = -1;        // the probe's exit code; -1 when it did not exit normally
  int signal = 0;
  std::string out;
  pid_t pid = 0;
};

std::string show(const Result& r) { return "exit " + std::to_string(r.exit) + ": " + r.out; }

// What spawnChild does: the plan to pine-launch, which enters the sandbox just before execve.
Result spawn(const Opt& o, std::vector<std::string> args, bool detach = false) {
  Fixture& f = fx();
  Grants g = o.grants;
  g.network = o.net;
  Policy pol;
  if (o.broker) {
    BrokerPaths b;
    b.pineHome = f.pine;
    b.program = f.probe;
    b.loader = elfInterpreter(f.probe);
    b.workspaces = {f.ws, f.bws};
    b.listenPorts = {7433};
    b.connectPorts = o.brokerConnect;
    pol = brokerPolicy(b);
  } else {
    pol = agentPolicy(f.paths, g, o.tainted);
  }
  pol.readable.insert(pol.readable.end(), o.extraRead.begin(), o.extraRead.end());
  pol.denyRead.insert(pol.denyRead.end(), o.extraDenyRead.begin(), o.extraDenyRead.end());
  pol.userNamespaces = o.userNamespaces;
  LinuxOptions lo;
  lo.cwd = o.broker ? f.pine + "/data" : f.ws;
  lo.useNamespaces = o.namespaces;
  if (o.masks || o.broker) {
    lo.maskDir = f.root + "/mask";
    lo.maskFile = f.root + "/mask-file";
  }
  LinuxPlan plan = buildLinuxPlan(pol, lo, kernel());
  if (!o.cwd.empty()) plan.cwd = o.cwd;

  args.insert(args.begin(), f.probe);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env = o.broker ? brokerEnvironment(f.pine) : workerEnvironment(f.paths);
  // In the sanitizer build: LeakSanitizer needs ptrace at exit, which the sandbox refuses (as pined does for workers).
  env.push_back("ASAN_OPTIONS=detect_leaks=0");
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  int sv[2], out[2], errp[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  REQUIRE(pipe2(out, O_CLOEXEC) == 0);
  REQUIRE(pipe2(errp, O_CLOEXEC) == 0);
  int errPipe = fcntl(errp[1], F_DUPFD_CLOEXEC, 10);
  close(errp[1]);
  int planFd = o.control ? -1 : writeLaunchPlan(plan, {argv[0], args, env});
  char* launcherArgv[] = {f.launcher.data(), nullptr};
  char* launcherEnv[] = {const_cast<char*>("ASAN_OPTIONS=detect_leaks=0"), nullptr};
  pid_t parent = getpid();
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    auto fail = [&](int e) {
      LaunchReport r{kStageExec, e};
      ssize_t ignored = write(errPipe, &r, sizeof r);
      (void)ignored;
      _exit(127);
    };
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) fail(ESRCH);
    if (setsid() < 0) fail(errno);
    int devnull = open("/dev/null", O_RDWR);
    if (dup2(devnull, 0) < 0 || dup2(out[1], 1) < 0 || dup2(out[1], 2) < 0 || dup2(sv[1], 3) < 0) fail(errno);
    if (o.control) {
      syscall(SYS_close_range, 4, errPipe - 1, 0);
      syscall(SYS_close_range, errPipe + 1, ~0U, 0);
      if (geteuid() == 0 && (setgroups(0, nullptr) != 0 || setresgid(65534, 65534, 65534) != 0 ||
                             setresuid(65534, 65534, 65534) != 0))
        fail(errno);
      execve(argv[0], argv.data(), envp.data());
      fail(errno);
    }
    if (dup2(planFd, kLaunchPlanFd) < 0 || dup2(errPipe, kLaunchReportFd) < 0) fail(errno);
    errPipe = kLaunchReportFd;
    syscall(SYS_close_range, kLaunchReportFd + 1, ~0U, 0);
    execve(launcherArgv[0], launcherArgv, launcherEnv);
    fail(errno);
  }
  if (planFd >= 0) close(planFd);
  close(errPipe);
  close(out[1]);
  close(sv[1]);
  Result r;
  r.pid = pid;
  LaunchReport failed{};
  ssize_t n = read(errp[0], &failed, sizeof failed);
  close(errp[0]);
  if (n == (ssize_t)sizeof failed) r.out = "could not enter the sandbox: " + describeLaunchReport(failed) + "\n";
  if (detach) {
    close(out[0]);
    close(sv[0]);
    return r;
  }
  if (args.size() > 1 && args[1] == "fd3") {
    char buf[4];
    if (read(sv[0], buf, 4) == 4 && memcmp(buf, "ping", 4) == 0) {
      ssize_t ignored = write(sv[0], "pong", 4);
      (void)ignored;
    }
  }
  char buf[4096];
  while ((n = read(out[0], buf, sizeof buf)) > 0) r.out.append(buf, (size_t)n);
  close(out[0]);
  close(sv[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(st)) r.exit = WEXITSTATUS(st);
  if (WIFSIGNALED(st)) r.signal = WTERMSIG(st);
  return r;
}

Result run(std::vector<std::string> args, const Opt& o = {}) { return spawn(o, std::move(args)); }

// A denied path inside a readable tree is hidden by a mask (mount namespace) or carved out by
// Landlock (without): each way, with and without namespaces.
std::vector<Opt> everyWayToHide() {
  std::vector<Opt> out;
  for (bool masks : {true, false})
    for (bool namespaces : {true, false}) {
      Opt o;
      o.masks = masks;
      o.namespaces = namespaces;
      out.push_back(o);
    }
  return out;
}

#define REFUSED(r)                 \
  do {                             \
    Result r_ = (r);               \
    CHECK_MESSAGE(r_.exit == 1, show(r_)); \
  } while (0)
#define WORKS(r)                   \
  do {                             \
    Result r_ = (r);               \
    CHECK_MESSAGE(r_.exit == 0, show(r_)); \
  } while (0)

std::vector<pid_t> descendants(pid_t top) {
  std::vector<pid_t> out = {top};
  for (size_t i = 0; i < out.size(); ++i) {
    for (auto& e : fs::directory_iterator("/proc")) {
      std::string name = e.path().filename();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::ifstream stat(e.path() / "stat");
      std::string line;
      std::getline(stat, line);
      size_t close = line.rfind(')');
      if (close == std::string::npos) continue;
      char state;
      int ppid;
      if (sscanf(line.c_str() + close + 1, " %c %d", &state, &ppid) == 2 && ppid == out[i])
        out.push_back(std::stoi(name));
    }
  }
  return out;
}

bool alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  size_t close = line.rfind(')');
  return close != std::string::npos && line[close + 2] != 'Z';
}

}  // namespace

TEST_CASE("the kernel probe and the fail-closed decision") {
  const Probe& p = kernel();
  MESSAGE(describe(p));
  CHECK(p.landlockAbi > 0);
  CHECK(p.seccomp);
  CHECK(!refuseReason(p, {}).has_value());

  Requirements tooHigh;
  tooHigh.minLandlockAbi = 99;
  auto why = refuseReason(p, tooHigh);
  REQUIRE(why.has_value());
  CHECK(why->find("below the configured minimum") != std::string::npos);

  Probe none = p;
  none.landlockAbi = 0;
  why = refuseReason(none, {});
  REQUIRE(why.has_value());
  CHECK(why->find("Landlock is unavailable") != std::string::npos);
  CHECK_THROWS_AS(buildLinuxPlan({}, {}, none), PlanError);

  Probe noSeccomp = p;
  noSeccomp.seccomp = false;
  CHECK(refuseReason(noSeccomp, {}).has_value());

  Probe flat = p;
  flat.mountNs = flat.pidNs = flat.netNs = flat.procMount = false;
  CHECK(flat.degraded());
  Requirements strict;
  strict.requireNamespaces = true;
  CHECK(refuseReason(flat, strict).has_value());
  CHECK(!refuseReason(flat, {}).has_value());
  LinuxOptions lo;
  lo.minLandlockAbi = 99;
  try {
    buildLinuxPlan({}, lo, p);
    FAIL("no refusal");
  } catch (const PlanError& e) {
    CHECK(std::string(e.what()).find("sandbox.minLandlockAbi") != std::string::npos);
  }
  if (geteuid() == 0) {
    LinuxOptions asRoot;
    asRoot.workerUid = 0;
    CHECK_THROWS_AS(buildLinuxPlan({}, asRoot, p), PlanError);
  }
}

TEST_CASE("control: without the sandbox, the same uid reaches every target of the attacks") {
  Fixture& f = fx();
  Opt c;
  c.control = true;
  WORKS(run({"read", f.home + "/.ssh/id_rsa"}, c));
  WORKS(run({"read", f.pine + "/.env"}, c));
  WORKS(run({"read", f.bws + "/secret.txt"}, c));
  WORKS(run({"link", f.outside + "/workers-own", f.tmp + "/control-hard"}, c));
  WORKS(run({"tcp", "127.0.0.1", std::to_string(f.tcpPort)}, c));
  WORKS(run({"unix", f.unixPath}, c));
  WORKS(run({"abstract", f.abstractName}, c));
  WORKS(run({"kill-child"}, c));
  fs::remove(f.tmp + "/control-hard");
}

TEST_CASE("a worker holds no capabilities and cannot regain any") {
  WORKS(run({"status"}));
  REFUSED(run({"setuid0"}));
  REFUSED(run({"capset"}));
  // A setuid-root program runs, but not as root (no_new_privs).
  Result suid = run({"exec", fx().prog + "/probe-suid", "euid0"});
  CHECK_MESSAGE(suid.exit == 1, show(suid));
  CHECK(suid.out.find("refused: euid") != std::string::npos);
  REFUSED(run({"exec", "/usr/bin/su", "-c", "true", "root"}));
  REFUSED(run({"exec", "/usr/bin/passwd", "-d", "root"}));
  WORKS(run({"exec", "/bin/true"}));
}

TEST_CASE("a denied path inside a readable tree: hidden by a mask in a mount namespace, carved out by Landlock without") {
  Fixture& f = fx();
  std::string shared = f.outside + "/shared";
  fs::create_directories(shared + "/private");
  writeText(shared + "/open.txt", "readable\n");
  writeText(shared + "/private/key", "denied dir\n");
  writeText(shared + "/token", "denied file\n");
  for (auto p : {shared, shared + "/private"}) chmod(p.c_str(), 0755);
  for (auto p : {shared + "/open.txt", shared + "/private/key", shared + "/token"}) chmod(p.c_str(), 0644);
  for (Opt o : everyWayToHide()) {
    CAPTURE(o.masks);
    CAPTURE(o.namespaces);
    o.extraRead = {shared};
    o.extraDenyRead = {shared + "/private", shared + "/token"};
    // The files are readable by anyone as far as permissions go: only the sandbox stops these.
    REFUSED(run({"read", shared + "/private/key"}, o));
    REFUSED(run({"read", shared + "/token"}, o));
    REFUSED(run({"write", shared + "/token"}, o));
    REFUSED(run({"write", shared + "/private/new"}, o));
    WORKS(run({"read", shared + "/open.txt"}, o));
    CHECK(fs::file_size(shared + "/token") == 12);
  }
  // Masks cut the Landlock rules a denied path in /etc costs (one for every neighbour otherwise).
  Policy pol = agentPolicy(f.paths, {}, false);
  LinuxOptions lo;
  lo.cwd = f.ws;
  size_t carved = buildLinuxPlan(pol, lo, kernel()).landlock.rules.size();
  lo.maskDir = f.root + "/mask";
  lo.maskFile = f.root + "/mask-file";
  LinuxPlan masked = buildLinuxPlan(pol, lo, kernel());
  if (masked.newMountNs) {
    CHECK(masked.landlock.rules.size() < carved);
    bool etcWhole = false;
    for (auto& r : masked.landlock.rules) etcWhole |= r.path == "/etc";
    CHECK(etcWhole);
    bool shadowMasked = false;
    for (auto& b : masked.binds) shadowMasked |= b.path == "/etc/shadow" && b.source == lo.maskFile && b.readOnly;
    CHECK(shadowMasked);
  }
}

TEST_CASE("secrets are not readable; the agent's own things are") {
  Fixture& f = fx();
  REFUSED(run({"read", f.home + "/.ssh/id_rsa"}));
  REFUSED(run({"read", f.pine + "/.env"}));
  REFUSED(run({"read", f.bws + "/secret.txt"}));
  REFUSED(run({"read", f.pine + "/agents/a/AGENTS.md"}));
  REFUSED(run({"read", "/etc/shadow"}));
  REFUSED(run({"read", "/proc/" + std::to_string(getpid()) + "/environ"}));
  REFUSED(run({"read", "/proc/1/environ"}));
  WORKS(run({"read", f.ws + "/hello.txt"}));
  WORKS(run({"read", f.pine + "/agents/a/skills/SKILL.md"}));
  WORKS(run({"read", f.pine + "/docs/manual.md"}));
  WORKS(run({"read", "/etc/passwd"}));
  WORKS(run({"read", "/proc/self/environ"}));
  WORKS(run({"read", "/dev/urandom"}));
  // A granted folder becomes readable, and only that one.
  Opt granted;
  granted.grants.read = {f.outside};
  WORKS(run({"read", f.outside + "/secret"}, granted));
  REFUSED(run({"read", f.pine + "/.env"}, granted));
  // Without namespaces (degraded): the same file boundary.
  Opt flat;
  flat.namespaces = false;
  REFUSED(run({"read", f.pine + "/.env"}, flat));
  REFUSED(run({"read", "/proc/" + std::to_string(getpid()) + "/environ"}, flat));
  WORKS(run({"read", f.ws + "/hello.txt"}, flat));
}

TEST_CASE("a script the agent writes meets the jail's protected names: .env files in its own trees are closed") {
  Fixture& f = fx();
  // The files are the worker's own as far as permissions go: only the sandbox stops these.
  std::string app = f.ws + "/app", site = f.outside + "/site";
  fs::create_directories(app + "/config");
  fs::create_directories(site);
  const std::vector<std::string> secrets = {app + "/.env", app + "/.ENV.local", app + "/config/.Env.production",
                                            site + "/.env"};
  for (auto& s : secrets) writeText(s, "API_KEY=sk-workspace-secret\n", 0666);
  writeText(app + "/.envrc", "export PATH=$PWD/bin:$PATH\n", 0666);
  writeText(app + "/env.example", "API_KEY=\n", 0666);
  writeText(site + "/index.html", "<p>hi</p>\n", 0666);
  for (auto d : {app, app + "/config", site}) chmod(d.c_str(), 0777);
  // The script is written first, then run: the shell that runs it sees only its name.
  auto script = [&](const std::string& body) {
    return "cd " + app + " && cat > \"$TMPDIR/s.sh\" <<'EOF'\n" + body + "\nEOF\nsh \"$TMPDIR/s.sh\"";
  };
  for (Opt o : everyWayToHide()) {
    CAPTURE(o.masks);
    CAPTURE(o.namespaces);
    o.grants.read = {site};
    const std::vector<std::string> attacks = {
        "cat .env", "cat .ENV.local", "cat config/.Env.production", "cat ./config/../.env", "echo API_KEY=x >> .env",
        "printf x > .env", "cp .env /dev/stdout", "python3 -c 'print(open(\".env\").read())'",
        "mv .env stolen && cat stolen", "rm .env", "ln .env hard && cat hard", "cat " + site + "/.env",
        "find . -name '.env*' -exec cat {} +  | grep -q sk-workspace"};
    for (const std::string& attack : attacks) {
      CAPTURE(attack);
      REFUSED(run({"sh", script(attack)}, o));
    }
    // The twins: names that only look alike, and the rest of the trees.
    const std::vector<std::string> twins = {"cat .envrc", "echo 'export A=1' >> .envrc", "cat env.example",
                                            "ls -a | grep -q .env", "cat " + site + "/index.html"};
    for (const std::string& twin : twins) {
      CAPTURE(twin);
      WORKS(run({"sh", script(twin)}, o));
    }
    for (auto& s : secrets) CHECK(readFile(s) == "API_KEY=sk-workspace-secret\n");
  }
  // Through the tools' own path as well: the probe opens the file itself.
  Opt masked;
  masked.masks = true;
  REFUSED(run({"read", app + "/.env"}, masked));
  REFUSED(run({"write", app + "/.ENV.local"}, masked));
  WORKS(run({"read", app + "/.envrc"}, masked));
  fs::remove_all(app);
  fs::remove_all(site);
}

TEST_CASE("writing outside the workspace, private home and temp is refused") {
  Fixture& f = fx();
  REFUSED(run({"write", "/tmp/pine-sbx-escape"}));
  REFUSED(run({"write", f.outside + "/new"}));
  REFUSED(run({"write", f.pine + "/agents/a/AGENTS.md"}));
  REFUSED(run({"write", f.pine + "/pine.json"}));
  REFUSED(run({"write", f.prog + "/sandbox-probe"}));
  REFUSED(run({"write", f.bws + "/planted"}));
  WORKS(run({"write", f.ws + "/new.txt"}));
  WORKS(run({"write", f.priv + "/.profile"}));
  WORKS(run({"write", f.tmp + "/scratch"}));
  WORKS(run({"write", "/dev/null"}));
  CHECK(!fs::exists("/tmp/pine-sbx-escape"));
}

TEST_CASE("links and renames do not lead out") {
  Fixture& f = fx();
  // A link the worker makes: making it is fine, following it out is not.
  WORKS(run({"symlink", f.home + "/.ssh/id_rsa", f.ws + "/key"}));
  REFUSED(run({"read", f.ws + "/key"}));
  WORKS(run({"symlink", f.ws + "/hello.txt", f.ws + "/hello-link"}));
  WORKS(run({"read", f.ws + "/hello-link"}));
  // Links planted beforehand, also in a parent of the path.
  fs::create_symlink(f.pine + "/.env", f.ws + "/env-link");
  fs::create_directory_symlink(f.pine, f.ws + "/pine-dir");
  REFUSED(run({"read", f.ws + "/env-link"}));
  REFUSED(run({"read", f.ws + "/pine-dir/.env"}));
  REFUSED(run({"write", f.ws + "/pine-dir/agents/b/workspace/x"}));
  WORKS(run({"symlink", f.ws + "/d1", f.ws + "/d1-link"}));
  WORKS(run({"write", f.ws + "/d1-link/through-link"}));
  // Hard links: not to a file outside, yes inside.
  REFUSED(run({"link", f.outside + "/secret", f.ws + "/hard"}));
  REFUSED(run({"link", f.outside + "/workers-own", f.ws + "/hard2"}));
  REFUSED(run({"link", f.pine + "/.env", f.ws + "/hard-env"}));
  WORKS(run({"link", f.ws + "/hello.txt", f.ws + "/hello-hard"}));
  // Renaming a parent, or moving something out.
  REFUSED(run({"rename", f.ws, f.ws + "-moved"}));
  REFUSED(run({"rename", f.pine + "/agents/a", f.pine + "/agents/z"}));
  REFUSED(run({"rename", f.ws + "/hello.txt", f.outside + "/hello.txt"}));
  WORKS(run({"mkdir", f.ws + "/d2"}));
  WORKS(run({"rename", f.ws + "/d2", f.ws + "/d3"}));
  WORKS(run({"rename", f.tmp + "/scratch", f.ws + "/from-tmp"}));
}

TEST_CASE("network none: no sockets of any family; the broker link and socketpair work") {
  Fixture& f = fx();
  std::string port = std::to_string(f.tcpPort);
  REFUSED(run({"tcp", "127.0.0.1", port}));
  REFUSED(run({"tcp", "1.1.1.1", "443"}));
  REFUSED(run({"udp", "127.0.0.1", port}));
  REFUSED(run({"udp", "8.8.8.8", "53"}));  // DNS: the resolver is not reachable
  REFUSED(run({"unix", f.unixPath}));
  REFUSED(run({"abstract", f.abstractName}));
  REFUSED(run({"io_uring"}));
  REFUSED(run({"tcp-self"}));
  WORKS(run({"socketpair"}));
  WORKS(run({"fd3"}));
  Opt flat;
  flat.namespaces = false;
  REFUSED(run({"tcp", "127.0.0.1", port}, flat));
  REFUSED(run({"abstract", f.abstractName}, flat));
  WORKS(run({"fd3"}, flat));
}

TEST_CASE("network all and localhost open what they say, and unix sockets stay closed") {
  Fixture& f = fx();
  std::string port = std::to_string(f.tcpPort);
  Opt all;
  all.net = Network::All;
  WORKS(run({"tcp", "127.0.0.1", port}, all));
  WORKS(run({"udp", "127.0.0.1", port}, all));
  REFUSED(run({"unix", f.unixPath}, all));
  REFUSED(run({"abstract", f.abstractName}, all));
  REFUSED(run({"io_uring"}, all));
  WORKS(run({"fd3"}, all));
  Opt local;
  local.net = Network::Localhost;
  if (kernel().netNs) {
    WORKS(run({"tcp-self"}, local));
    REFUSED(run({"tcp", "127.0.0.1", port}, local));  // the host's loopback is another namespace's
  }
  REFUSED(run({"tcp", "1.1.1.1", "443"}, local));
}

TEST_CASE("the filter refuses namespaces, mounts, keys, bpf, perf, userfaultfd and memory access") {
  std::string me = std::to_string(getpid());
  for (Opt o : {Opt{}, Opt{false, Network::None, false, {}}}) {
    CAPTURE(o.namespaces);
    for (const char* a : {"userns", "clone-userns", "clone3", "mount", "setns", "keyctl", "bpf", "userfaultfd",
                          "perf"})
      REFUSED(run({a}, o));
    REFUSED(run({"process_vm_readv", me}, o));
  }
  // Twin: without the filter (control) the same uid may make a user namespace and use its keyring.
  Opt c;
  c.control = true;
  WORKS(run({"userns"}, c));
  WORKS(run({"keyctl"}, c));
}

TEST_CASE("userNamespaces (pine-browser's filter) lets user namespaces through, and nothing else of the list") {
  Opt b;
  b.userNamespaces = true;
  WORKS(run({"userns"}, b));
  WORKS(run({"clone-userns"}, b));
  std::string me = std::to_string(getpid());
  for (const char* a : {"clone3", "mount", "setns", "keyctl", "bpf", "userfaultfd", "perf"}) {
    CAPTURE(a);
    REFUSED(run({a}, b));
  }
  REFUSED(run({"process_vm_readv", me}, b));
  REFUSED(run({"ptrace", me}, b));
  REFUSED(run({"userns"}));  // the twin: without the option, refused (as for every worker and other connector)
}

TEST_CASE("the worker cannot signal or trace the supervisor; its own children it can") {
  std::string me = std::to_string(getpid());
  REFUSED(run({"kill", me}));
  REFUSED(run({"ptrace", me}));
  REFUSED(run({"kill", "1"}));
  WORKS(run({"kill-child"}));
  Opt flat;
  flat.namespaces = false;
  REFUSED(run({"kill", me}, flat));
  REFUSED(run({"ptrace", me}, flat));
  WORKS(run({"kill-child"}, flat));
}

TEST_CASE("as root, a worker's uid may have at most 4096 processes; hundreds at once still work") {
  // A review ran `while true; do sleep 100 & done` in an agent's sandbox: nothing bounded it but
  // the machine's pid_max. The kernel now stops that uid at 4096 processes (and threads).
  if (geteuid() != 0) return;  // unprivileged: the uid is the owner's, and not bounded by pine
  WORKS(run({"sh", "/usr/bin/python3 -c 'import resource; s, h = resource.getrlimit(resource.RLIMIT_NPROC); "
                   "exit(0 if 0 < s <= 4096 and 0 < h <= 4096 else 1)'"}));
  WORKS(run({"sh", "for i in $(seq 300); do sleep 2 & done; wait"}));  // the twin: a busy build's worth
}

TEST_CASE("git, python3, sh, pipes, child processes and TMPDIR work") {
  std::string script =
      "set -e; cd \"$HOME\" >/dev/null; cd " + fx().ws +
      "; git init -q proj; cd proj; echo hi > f.txt; git add f.txt;"
      " git -c user.name=pine -c user.email=pine@example.invalid commit -qm first;"
      " git log --oneline | grep -q first;"
      " /usr/bin/python3 -c 'import os,tempfile,subprocess;"
      " f=tempfile.NamedTemporaryFile(dir=os.environ[\"TMPDIR\"]); f.write(b\"x\"); f.flush();"
      " print(subprocess.run([\"echo\",\"child\"],capture_output=True).stdout.decode().strip())' | grep -q child;"
      " echo abc | tr a-c x-z | grep -q xyz;"
      " (sleep 0 & wait);"
      " echo tmp > \"$TMPDIR/t\" && cat \"$TMPDIR/t\" | grep -q tmp;"
      " test \"$(env | wc -l)\" -le 8";
  WORKS(run({"sh", script}));
  Opt flat;
  flat.namespaces = false;
  WORKS(run({"sh", "set -e; cd " + fx().ws + "/proj; git status --short; echo x | cat"}, flat));
}

TEST_CASE("a tainted session cannot change .git/hooks, .git/config or instruction files") {
  Fixture& f = fx();
  std::string repo = f.ws + "/guarded";
  std::string git = "git -c user.name=pine -c user.email=pine@example.invalid ";
  // Untainted: the repository is made, a nested one and a submodule-like git dir too, and hooks are writable.
  WORKS(run({"sh", "set -e; cd " + f.ws + "; echo rules > AGENTS.md; git init -q guarded; cd guarded; echo a > a; git add a; " + git +
                       "commit -qm one; git init -q vendor/inner; mkdir -p .pi notes; echo x > AGENTS.md; "
                       "echo y > notes/CLAUDE.md"}));
  WORKS(run({"write", repo + "/.git/hooks/pre-commit"}));
  WORKS(run({"write", repo + "/.git/config.probe"}));

  Opt tainted;
  tainted.tainted = true;
  for (Opt o : {tainted, Opt{true, Network::None, false, {}}}) {
    CAPTURE(o.namespaces);
    REFUSED(run({"write", repo + "/.git/hooks/pre-commit"}, o));
    REFUSED(run({"write", repo + "/.git/hooks/post-checkout"}, o));
    REFUSED(run({"write", repo + "/.git/config"}, o));
    REFUSED(run({"write", repo + "/vendor/inner/.git/hooks/pre-commit"}, o));
    REFUSED(run({"write", repo + "/vendor/inner/.git/config"}, o));
    REFUSED(run({"write", repo + "/AGENTS.md"}, o));
    REFUSED(run({"write", repo + "/notes/CLAUDE.md"}, o));
    REFUSED(run({"write", repo + "/.pi/extension.js"}, o));
    REFUSED(run({"write", f.ws + "/AGENTS.md"}, o));  // existing at the workspace's top
    // Moving .git aside (to put another in its place) fails too.
    REFUSED(run({"rename", repo + "/.git", repo + "/.git-old"}, o));
    REFUSED(run({"rename", repo + "/.git/hooks", repo + "/.git/hooks-old"}, o));
    REFUSED(run({"unlink", repo + "/.git/config"}, o));
    REFUSED(run({"rename", repo + "/.git/config.probe", repo + "/.git/config"}, o));
    // The twin: notes the agent does not read as instructions are still written.
    WORKS(run({"write", repo + "/notes/other.md"}, o));
  }
  // With namespaces git still commits and new files appear anywhere. Without
  // (degraded), Landlock alone guards by taking from the folders on the way to a
  // guarded path the right to add or remove entries, so git cannot commit there.
  WORKS(run({"sh", "set -e; cd " + repo + "; echo b >> a; git add a; " + git + "commit -qm two; git log --oneline"},
            tainted));
  WORKS(run({"write", f.ws + "/notes.md"}, tainted));
  // With namespaces, renaming the folder that holds the repository is refused as well.
  REFUSED(run({"rename", repo, f.ws + "/guarded-moved"}, tainted));
  // Untainted again: everything is the agent's to change.
  WORKS(run({"write", repo + "/.git/hooks/pre-commit"}));
  WORKS(run({"write", repo + "/AGENTS.md"}));
}

TEST_CASE("signals reach the worker through the monitor; killing the monitor kills every descendant") {
  if (!kernel().pidNs) return;
  Opt o;
  // SIGTERM to the supervisor's child is forwarded and the worker's death is reported as its own.
  Result r = spawn(o, {"sleep"}, true);
  REQUIRE(r.pid > 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  kill(r.pid, SIGTERM);
  int st = 0;
  waitpid(r.pid, &st, 0);
  CHECK(WIFSIGNALED(st));
  if (WIFSIGNALED(st)) CHECK(WTERMSIG(st) == SIGTERM);

  // A tree of processes inside, then SIGKILL to the monitor only.
  r = spawn(o, {"sh", "sleep 60 & sleep 60 & sleep 60"}, true);
  REQUIRE(r.pid > 0);
  std::vector<pid_t> tree;
  for (int i = 0; i < 100 && tree.size() < 6; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    tree = descendants(r.pid);
  }
  CHECK(tree.size() >= 6);  // monitor, init, probe, sh, sleeps
  kill(r.pid, SIGKILL);
  waitpid(r.pid, &st, 0);
  bool anyAlive = true;
  for (int i = 0; i < 100 && anyAlive; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    anyAlive = false;
    for (pid_t p : tree)
      if (p != r.pid && alive(p)) anyAlive = true;
  }
  CHECK(!anyAlive);
}

TEST_CASE("an unprivileged pined: the same boundary from a user namespace") {
  if (geteuid() != 0) return;  // already unprivileged: every case above ran this way
  Fixture& f = fx();
  // A forked copy of this test drops to the worker uid (what an unprivileged
  // pined is) and runs the cases there; it reports by exit status.
  int pipefd[2];
  REQUIRE(pipe2(pipefd, O_CLOEXEC) == 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(pipefd[0]);
    std::string report;
    int failures = 0;
    try {
      if (setgroups(0, nullptr) != 0 || setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0)
        _exit(98);
      static Probe p = probeKernel();
      gProbeOverride = &p;
      report += describe(p) + "\n";
      struct Case {
        std::vector<std::string> args;
        Opt opt;
        int expect;
      };
      Opt tainted;
      tainted.tainted = true;
      std::vector<Case> cases = {
          {{"status"}, {}, 0},
          {{"read", f.pine + "/.env"}, {}, 1},
          {{"read", f.home + "/.ssh/id_rsa"}, {}, 1},
          {{"read", f.bws + "/secret.txt"}, {}, 1},
          {{"write", f.ws + "/from-userns"}, {}, 0},
          {{"write", f.outside + "/from-userns"}, {}, 1},
          {{"tcp", "127.0.0.1", std::to_string(f.tcpPort)}, {}, 1},
          {{"abstract", f.abstractName}, {}, 1},
          {{"fd3"}, {}, 0},
          {{"setuid0"}, {}, 1},
          {{"kill", std::to_string(getppid())}, {}, 1},
          {{"sh", "set -e; cd " + f.ws + "; rm -rf uns; git init -q uns; mkdir uns/notes"}, {}, 0},
          {{"write", f.ws + "/uns/.git/hooks/pre-commit"}, {}, 0},
          {{"write", f.ws + "/uns/.git/hooks/pre-commit"}, tainted, 1},
          {{"write", f.ws + "/uns/.git/config"}, tainted, 1},
          {{"rename", f.ws + "/uns/.git", f.ws + "/uns/.git-old"}, tainted, 1},
          {{"write", f.ws + "/uns/notes/from-userns.md"}, tainted, 0},
      };
      // The broker of an unprivileged pined shares its uid: only the sandbox keeps .env closed.
      Opt broker;
      broker.broker = true;
      for (Case c : std::vector<Case>{{{"read", f.pine + "/.env"}, broker, 1},
                                      {{"read", f.pine + "/pine.yaml"}, broker, 0},
                                      {{"write", f.pine + "/pine.yaml"}, broker, 1},
                                      {{"write", f.pine + "/agents/a/new-file"}, broker, 1},
                                      {{"read", f.bws + "/secret.txt"}, broker, 1},
                                      {{"exec", "/bin/true"}, broker, 1}})
        cases.push_back(c);
      for (auto& c : cases) {
        Result r = spawn(c.opt, c.args);
        if (r.exit != c.expect) {
          ++failures;
          report += "FAILED " + c.args[0] + " " + (c.args.size() > 1 ? c.args[1] : "") + ": " + show(r);
        }
      }
    } catch (...) {
      report += "exception\n";
      failures = 97;
    }
    ssize_t ignored = write(pipefd[1], report.data(), report.size());
    (void)ignored;
    _exit(failures);
  }
  close(pipefd[1]);
  std::string report;
  char buf[4096];
  ssize_t n;
  while ((n = read(pipefd[0], buf, sizeof buf)) > 0) report.append(buf, (size_t)n);
  close(pipefd[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  MESSAGE(report);
  CHECK(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 0);
}

TEST_CASE("the broker's sandbox: the home but .env, data/ only, no program but its own, its TCP ports") {
  Fixture& f = fx();
  Opt b;
  b.broker = true;
  REFUSED(run({"read", f.pine + "/.env"}, b));                  // masked, though world-readable here
  WORKS(run({"read", f.pine + "/pine.yaml"}, b));
  WORKS(run({"read", f.pine + "/agents/a/AGENTS.md"}, b));
  REFUSED(run({"write", f.pine + "/pine.yaml"}, b));
  REFUSED(run({"write", f.pine + "/agents/a/AGENTS.md"}, b));
  REFUSED(run({"write", f.pine + "/agents/a/new-file"}, b));
  REFUSED(run({"mkdir", f.pine + "/agents/c"}, b));
  REFUSED(run({"unlink", f.pine + "/pine.yaml"}, b));
  WORKS(run({"write", f.pine + "/data/broker-note"}, b));
  REFUSED(run({"read", f.bws + "/secret.txt"}, b));             // workspaces are not the broker's
  REFUSED(run({"read", f.ws + "/hello.txt"}, b));
  REFUSED(run({"read", f.home + "/.ssh/id_rsa"}, b));
  REFUSED(run({"read", "/bin/sh"}, b));                         // no folder of programs
  REFUSED(run({"exec", "/bin/true"}, b));                       // nothing but its own program runs
  REFUSED(run({"exec", elfInterpreter(f.probe), "/bin/true"}, b));  // the loader runs, but has nothing to load
  WORKS(run({"fd3"}, b));
  REFUSED(run({"write", f.outside + "/from-broker"}, b));
  // TCP: only the ports it was given (Landlock ABI 4 and later).
  if (kernel().landlockAbi >= 4) {
    REFUSED(run({"tcp", "127.0.0.1", std::to_string(f.tcpPort)}, b));
    Opt dial = b;
    dial.brokerConnect = {f.tcpPort};
    WORKS(run({"tcp", "127.0.0.1", std::to_string(f.tcpPort)}, dial));
  }
}

TEST_CASE("a granted folder out of the sandboxed uid's reach is skipped, not a reason to fail the start") {
  // As root, pine's broker runs as a user of its own; a watched folder inside an agent's workspace
  // (mode 700, the agent's user) is out of its reach. That folder stays closed, and everything else
  // the broker needs still starts: before, one such rule stopped the broker from starting at all.
  Fixture& f = fx();
  std::string closed = f.root + "/closed", inner = closed + "/inner";
  fs::create_directories(inner);
  writeText(inner + "/note.txt", "not the broker's\n");
  chmod(closed.c_str(), 0);  // not even its owner may pass (the probe runs as another uid under root)
  Opt b;
  b.broker = true;
  b.extraRead = {inner};
  REFUSED(run({"read", inner + "/note.txt"}, b));
  WORKS(run({"read", f.pine + "/pine.yaml"}, b));
  REFUSED(run({"read", f.pine + "/.env"}, b));
  // The twin: the same folder, reachable, is granted.
  chmod(closed.c_str(), 0755);
  WORKS(run({"read", inner + "/note.txt"}, b));
  fs::remove_all(closed);
}

TEST_CASE("pine-launch reports the step that failed, and refuses to start with an environment of its own") {
  Opt gone;
  gone.cwd = fx().root + "/no-such-folder";
  Result r = run({"status"}, gone);
  CHECK_MESSAGE(r.exit == 127, show(r));
  CHECK_MESSAGE(r.out.find("could not enter the sandbox: chdir: No such file or directory") != std::string::npos,
                show(r));
  WORKS(run({"status"}));  // the same plan with its own working directory runs

  // Started with anything in its environment but a sanitizer's settings, it runs nothing.
  Fixture& f = fx();
  LinuxPlan plan = buildLinuxPlan(agentPolicy(f.paths, {}, false), LinuxOptions{}, kernel());
  int planFd = writeLaunchPlan(plan, {f.probe, {f.probe, "status"}, {}});
  int errp[2], out[2];
  REQUIRE(pipe2(errp, O_CLOEXEC) == 0);
  REQUIRE(pipe2(out, O_CLOEXEC) == 0);
  int high = fcntl(errp[1], F_DUPFD_CLOEXEC, 10);  // above the fds the child arranges
  close(errp[1]);
  errp[1] = high;
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (dup2(out[1], 2) < 0 || dup2(planFd, kLaunchPlanFd) < 0 || dup2(errp[1], kLaunchReportFd) < 0) _exit(99);
    char* argv[] = {f.launcher.data(), nullptr};
    char* envp[] = {const_cast<char*>("OPENAI_KEY=sk-would-be-inherited"), nullptr};
    execve(argv[0], argv, envp);
    _exit(98);
  }
  close(planFd);
  close(errp[1]);
  close(out[1]);
  LaunchReport failed{};
  CHECK(read(errp[0], &failed, sizeof failed) == (ssize_t)sizeof failed);
  CHECK(failed.stage == kStagePlan);
  std::string err;
  char buf[512];
  ssize_t n;
  while ((n = read(out[0], buf, sizeof buf)) > 0) err.append(buf, (size_t)n);
  CHECK(err.find("started with an environment (OPENAI_KEY)") != std::string::npos);
  CHECK(err.find("sk-would-be") == std::string::npos);  // the name only, never the value
  close(errp[0]);
  close(out[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  CHECK(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 127);
}
