// Sandboxed worker start-up: from "start spawning" to the worker's first RPC
// (getTask) arriving at an in-process Broker, for the real pine-worker binary,
// against the floor (the same spawn with no sandbox) measured in the same run,
// interleaved, and against bubblewrap when /usr/bin/bwrap exists.
//
// Timed, per iteration (steady clock, in this process):
//   t0      before AgentSandboxes::prepare() (pine variants; pined prepares per
//           task, so preparing once outside the loop would flatter pine) or
//           before socketpair() (floor, bwrap)
//   tExec   spawnChild() returned: the worker's execve succeeded (its error pipe
//           closed: for pine variants, once pine-launch entered the sandbox and
//           exec'd it); for bwrap this is bwrap's own exec, not the worker's
//   tFirst  the worker's getTask call reaches the broker's dispatch: the figure
//   tDone   the worker's finish() has been handled (the task answered)
// Not timed: waiting for the worker to disconnect and exit, and waitpid().
//
// --also-launcher PATH adds a variant that starts the same sandbox through another build of
// pine-launch, interleaved with the others (to weigh a change to how the launcher is built).
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <kj/async-io.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/mman.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "broker/worker_link.h"
#include "common/link_stream.h"
#include "common/rpc_link.h"
#include "sandbox/agent_sandbox.h"
#include "sandbox/linux/landlock.h"
#include "sandbox/linux/linux_host.h"
#include "sandbox/linux/namespaces.h"
#include "sandbox/linux/seccomp_filter.h"
#include "supervisor/spawn.h"

using Clock = std::chrono::steady_clock;

namespace {

double ms(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

// The Broker the worker sees: WorkerBroker (final) behind a forwarder that
// stamps the moment getTask arrives.
class TimedBroker final : public pine::proto::Broker::Server {
 public:
  TimedBroker(pine::proto::Broker::Client inner, std::optional<Clock::time_point>* firstCall)
      : inner_(kj::mv(inner)), firstCall_(firstCall) {}

 protected:
  kj::Promise<void> getTask(GetTaskContext context) override {
    if (!*firstCall_) *firstCall_ = Clock::now();
    return context.tailCall(inner_.getTaskRequest());
  }
  kj::Promise<void> finish(FinishContext context) override {
    auto req = inner_.finishRequest();
    req.setAnswer(context.getParams().getAnswer());
    return context.tailCall(kj::mv(req));
  }
  kj::Promise<void> fail(FailContext context) override {
    auto req = inner_.failRequest();
    req.setReason(context.getParams().getReason());
    return context.tailCall(kj::mv(req));
  }
  kj::Promise<void> ping(PingContext context) override { return context.tailCall(inner_.pingRequest()); }
  // The model answers at once, in the OpenAI stream format: the figure is the sandboxed start.
  kj::Promise<void> model(ModelContext context) override {
    static const std::string kAnswer =
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\n"
        "data: [DONE]\n\n";
    auto req = context.getParams().getSink().writeRequest();
    req.setChunk(kj::arrayPtr(reinterpret_cast<const kj::byte*>(kAnswer.data()), kAnswer.size()));
    return req.send().then([context]() mutable {
      auto r = context.getResults();
      r.setStatus(200);
      auto hs = r.initHeaders(1);
      hs[0].setName("content-type");
      hs[0].setValue("text/event-stream");
    });
  }

 private:
  pine::proto::Broker::Client inner_;
  std::optional<Clock::time_point>* firstCall_;
};

enum class Kind {
  Floor,
  Pine,
  Bwrap,
  // Breakdown: pine with one part taken out; the difference to Pine is that part's cost.
  NoNetNs,
  NoPidNs,
  NoMountNs,
  NoLandlock,
  TrivialSeccomp,
  NoNamespaces,
  // pine, through the launcher given with --also-launcher.
  OtherLauncher,
};

struct Variant {
  Kind kind;
  const char* name;
  const char* label;
};

struct Sample {
  double prepare = 0, toExec = 0, first = 0, done = 0;
};

struct Ctx {
  kj::AsyncIoContext* io;
  std::string worker, bindir;
  std::string launcher, otherLauncher;  // <bindir>/pine-launch unless --launcher; --also-launcher
  std::vector<std::string> env;  // the worker's environment, the same for every variant
  const pine::sandbox::AgentSandboxes* sandboxes;
  const pine::sandbox::AgentSandboxes* sandboxesNoNs;
  std::vector<std::string> bwrapArgs;
  int stderrFd = -1;
};

// A one-instruction allow-all filter: loading a filter still happens, pine's rules do not.
const sock_filter kAllowAll[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};

[[noreturn]] void die(const std::string& why) {
  fprintf(stderr, "bench-sandbox: %s\n", why.c_str());
  exit(1);
}

Sample runOnce(Ctx& c, Kind kind) {
  Sample s;
  auto t0 = Clock::now();
  std::optional<pine::sandbox::PreparedSandbox> box;
  if (kind != Kind::Floor && kind != Kind::Bwrap) {
    box = (kind == Kind::NoNamespaces ? c.sandboxesNoNs : c.sandboxes)->prepare({"main", {}, false, false, {}});
    auto plan = std::make_shared<pine::sandbox::LinuxPlan>(*box->linuxPlan);  // each variant changes its copy
    box->linuxPlan = plan;
    auto& p = *plan;
    switch (kind) {
      case Kind::NoNetNs: p.newNetNs = false; break;
      case Kind::NoPidNs: p.newPidNs = false; p.mountProc = false; break;
      case Kind::NoMountNs: p.newMountNs = false; p.mountProc = false; p.binds.clear(); break;
      case Kind::NoLandlock: p.landlock.abi = 0; break;
      case Kind::TrivialSeccomp: p.seccomp.assign(std::begin(kAllowAll), std::end(kAllowAll)); break;
      default: break;
    }
  }
  auto tPrep = Clock::now();

  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) die(std::string("socketpair: ") + strerror(errno));
  pine::SpawnSpec spec;
  if (kind == Kind::Bwrap) {
    spec.program = "/usr/bin/bwrap";
    spec.args = c.bwrapArgs;
  } else {
    spec.program = c.worker;
    spec.args = {c.worker, "--task", "bench", "--agent", "main"};
  }
  spec.env = c.env;
  spec.fd3 = sv[1];
  spec.stderrFd = c.stderrFd;
  spec.sandbox = box ? box->linuxPlan.get() : nullptr;
  spec.launcher = kind == Kind::OtherLauncher ? c.otherLauncher : c.launcher;  // pined: beside itself
  pid_t pid = pine::spawnChild(spec);
  auto tExec = Clock::now();
  close(sv[1]);

  std::optional<Clock::time_point> first;
  auto paf = kj::newPromiseAndFulfiller<pine::WorkerOutcome>();
  pine::proto::Broker::Client inner =
      kj::heap<pine::WorkerBroker>(pine::TaskForWorker{"bench", "main", "x", "linux:full"}, kj::mv(paf.fulfiller));
  pine::WorkerOutcome outcome;
  Clock::time_point tDone;
  {
    pine::RpcLink link(pine::wrapLinkSocket(c.io->unixEventPort, sv[0]),
                       capnp::rpc::twoparty::Side::SERVER, kj::heap<TimedBroker>(kj::mv(inner), &first), 512 * 1024);
    auto& timer = c.io->provider->getTimer();
    try {
      outcome = timer.timeoutAfter(10 * kj::SECONDS, kj::mv(paf.promise)).wait(c.io->waitScope);
    } catch (kj::Exception& e) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      die(std::string("the worker gave no answer (rerun with --show-stderr): ") + e.getDescription().cStr());
    }
    tDone = Clock::now();
    // Untimed: let the finish() answer reach the worker, which then exits and closes its end.
    timer.timeoutAfter(10 * kj::SECONDS, link.onDisconnect()).catch_([](kj::Exception&&) {}).wait(c.io->waitScope);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!outcome.done || !first) die("the worker failed: " + outcome.text);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) die("the worker did not exit 0 (rerun with --show-stderr)");
  s.prepare = ms(t0, tPrep);
  s.toExec = ms(t0, tExec);
  s.first = ms(t0, *first);
  s.done = ms(t0, tDone);
  return s;
}

// Where the child-side time goes, without exec or RPC: a forked child takes the
// steps of enterSandboxAndExec() one by one (same order, same plan; the init and the
// worker made with clone(CLONE_VM) as enter.cpp makes them) and stamps each.
// Credentials and chdir are left out (a few syscalls). Stamps are steady clock
// (vDSO), so they compare with the parent's.
constexpr int kSteps = 6;  // fork, unshare, pid-ns init + worker, mounts, Landlock, seccomp
const char* const kStepNames[kSteps] = {"fork (supervisor to child)", "unshare (mount, net, pid, ipc)",
                                        "pid namespace: init and worker (clone, CLONE_VM)",
                                        "mounts (private /, binds, /proc)", "Landlock (open+add_rule each rule)",
                                        "seccomp filter load"};

struct StepRun {
  const pine::sandbox::LinuxPlan* plan;
  Clock::time_point* t;
  int out;
  char* workerStack;
};
constexpr size_t kBenchStack = 256 * 1024;

// The worker's part: from the end of the namespaces to the loaded filter.
int stepsAfterNamespaces(void* arg) {
  auto& r = *static_cast<StepRun*>(arg);
  auto& plan = *r.plan;
  r.t[3] = Clock::now();
  if (plan.newMountNs && pine::sandbox::ns::applyMounts(plan.binds, plan.mountProc) != 0) _exit(2);
  r.t[4] = Clock::now();
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(3);
  if (plan.landlock.abi > 0 && pine::sandbox::landlock::restrictSelf(plan.landlock) != 0) _exit(4);
  r.t[5] = Clock::now();
  if (pine::sandbox::seccomp::loadInChild(plan.seccomp) != 0) _exit(5);
  r.t[6] = Clock::now();
  ssize_t ignored = write(r.out, r.t, sizeof(Clock::time_point) * (kSteps + 1));
  (void)ignored;
  _exit(0);
}

int stepsInit(void* arg) {
  auto& r = *static_cast<StepRun*>(arg);
  pid_t w = clone(stepsAfterNamespaces, r.workerStack + kBenchStack, CLONE_VM | CLONE_VFORK | SIGCHLD, arg);
  if (w < 0) _exit(6);
  int st;
  waitpid(w, &st, 0);
  _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 1);
}

std::vector<std::vector<double>> stepTimes(const pine::sandbox::AgentSandboxes& sandboxes, int rounds) {
  std::vector<std::vector<double>> out(kSteps);
  static char* stacks = static_cast<char*>(
      mmap(nullptr, 2 * kBenchStack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0));
  if (stacks == MAP_FAILED) die("mmap");
  for (int i = 0; i < rounds; ++i) {
    auto box = sandboxes.prepare({"main", {}, false, false, {}});
    const auto& plan = *box.linuxPlan;
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0) die("pipe2");
    int flags = (plan.newMountNs ? CLONE_NEWNS : 0) | (plan.newNetNs ? CLONE_NEWNET : 0) |
                (plan.newPidNs ? CLONE_NEWPID : 0) | (plan.newIpcNs ? CLONE_NEWIPC : 0);
    Clock::time_point t[kSteps + 1];
    t[0] = Clock::now();
    pid_t pid = fork();
    if (pid == 0) {
      t[1] = Clock::now();
      if (unshare(flags) != 0) _exit(1);
      t[2] = Clock::now();
      StepRun r{&plan, t, pfd[1], stacks + kBenchStack};
      if (!plan.newPidNs) stepsAfterNamespaces(&r);
      // monitor -> init (pid 1) -> worker (pid 2), as enter.cpp makes them
      pid_t init = clone(stepsInit, stacks + kBenchStack, CLONE_VM | SIGCHLD, &r);
      if (init < 0) _exit(7);
      int st;
      waitpid(init, &st, 0);
      _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 1);
    }
    close(pfd[1]);
    Clock::time_point got[kSteps + 1];
    ssize_t n = read(pfd[0], got, sizeof got);
    close(pfd[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    if (n != (ssize_t)sizeof got || !WIFEXITED(st) || WEXITSTATUS(st) != 0) die("the step-timing child failed");
    got[0] = t[0];
    for (int k = 0; k < kSteps; ++k) out[(size_t)k].push_back(ms(got[k], got[k + 1]));
  }
  return out;
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  size_t i = (size_t)std::ceil(q * (double)v.size());
  return v[std::min(v.size() - 1, i ? i - 1 : 0)];
}

std::string selfDir() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) die("cannot read /proc/self/exe");
  std::string p(buf, (size_t)n);
  return p.substr(0, p.find_last_of('/'));
}

std::string parentOf(const std::string& p) { return p.substr(0, p.find_last_of('/')); }

// bwrap's view of the system: what pine-worker needs to load (merged-/usr
// symlinks kept as symlinks), its own folder, and nothing of the host's home.
std::vector<std::string> bwrapArgs(const std::string& worker, const std::string& bindir) {
  std::vector<std::string> a = {"/usr/bin/bwrap", "--unshare-all", "--die-with-parent", "--cap-drop", "ALL",
                                "--ro-bind", "/usr", "/usr"};
  for (const char* d : {"/lib", "/lib64", "/bin"}) {
    struct stat st;
    if (lstat(d, &st) != 0) continue;
    if (S_ISLNK(st.st_mode)) {
      char target[256];
      ssize_t n = readlink(d, target, sizeof target - 1);
      if (n <= 0) continue;
      a.insert(a.end(), {"--symlink", std::string(target, (size_t)n), d});
    } else {
      a.insert(a.end(), {"--ro-bind", d, d});
    }
  }
  if (access("/etc/ld.so.cache", R_OK) == 0) a.insert(a.end(), {"--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache"});
  a.insert(a.end(), {"--ro-bind", bindir, bindir, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--chdir",
                     "/tmp", "--", worker, "--task", "bench", "--agent", "main"});
  return a;
}

int removeEntry(const char* path, const struct stat*, int, FTW*) { return remove(path); }

// A program's start alone: posix_spawn (vfork+exec, as spawnChild clones) with an empty
// environment and no fd above 2, then waitpid. pine-launch started so finds no plan on fd 4
// and exits 127 at the top of main(): what its exec and loading cost, before any sandbox step.
std::vector<double> execAlone(const std::string& path, int rounds) {
  std::vector<double> out;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  char* argv[] = {const_cast<char*>(path.c_str()), nullptr};
  char* envp[] = {nullptr};
  for (int i = 0; i < rounds; ++i) {
    auto t0 = Clock::now();
    pid_t pid;
    if (posix_spawn(&pid, path.c_str(), &fa, nullptr, argv, envp) != 0) die("posix_spawn " + path);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    out.push_back(ms(t0, Clock::now()));
  }
  posix_spawn_file_actions_destroy(&fa);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int iterations = 200;
  bool breakdown = true, showStderr = false;
  std::string worker, launcher, otherLauncher;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if ((a == "--iterations" || a == "-n") && i + 1 < argc) iterations = atoi(argv[++i]);
    else if (a == "--worker" && i + 1 < argc) worker = argv[++i];
    else if (a == "--launcher" && i + 1 < argc) launcher = argv[++i];
    else if (a == "--also-launcher" && i + 1 < argc) otherLauncher = argv[++i];
    else if (a == "--no-breakdown") breakdown = false;
    else if (a == "--show-stderr") showStderr = true;
    else {
      fprintf(stderr,
              "usage: bench-sandbox [--iterations N] [--worker PATH] [--launcher PATH] [--also-launcher PATH]\n"
              "                     [--no-breakdown] [--show-stderr]\n"
              "  default: 200 iterations of each variant, pine-worker and pine-launch from <builddir>/bin\n");
      return 2;
    }
  }
  if (iterations < 1) die("--iterations must be at least 1");
  signal(SIGPIPE, SIG_IGN);
  // The bench binary is <builddir>/bench/sandbox/bench-sandbox; the worker is <builddir>/bin/pine-worker.
  if (worker.empty()) worker = parentOf(parentOf(selfDir())) + "/bin/pine-worker";
  if (access(worker.c_str(), X_OK) != 0) die("no pine-worker at " + worker + " (build it, or pass --worker)");
  std::string bindir = parentOf(worker);
  if (launcher.empty()) launcher = bindir + "/pine-launch";
  if (access(launcher.c_str(), X_OK) != 0) die("no pine-launch at " + launcher + " (build bin/pine-launch too)");
  if (!otherLauncher.empty() && (otherLauncher[0] != '/' || access(otherLauncher.c_str(), X_OK) != 0))
    die("--also-launcher needs the absolute path of an executable pine-launch: " + otherLauncher);

  // As root, prepare() hands the agent folders to the agent's own uid, which must be able
  // to walk down to them: the temp home sits under a 0711 folder.
  char tmpl[] = "/tmp/pine-bench-sandbox.XXXXXX";
  if (!mkdtemp(tmpl)) die(std::string("mkdtemp: ") + strerror(errno));
  std::string top = tmpl;
  if (chmod(top.c_str(), 0711) != 0) die(std::string("chmod: ") + strerror(errno));
  std::string home = top + "/home";
  if (mkdir(home.c_str(), 0700) != 0) die(std::string("mkdir: ") + strerror(errno));

  auto probe = pine::sandbox::probeKernel();
  pine::sandbox::AgentSandboxes sandboxes(home, bindir, pine::sandbox::makeLinuxHost(probe, {}));
  pine::sandbox::LinuxOptions noNs;
  noNs.useNamespaces = false;
  pine::sandbox::AgentSandboxes sandboxesNoNs(home, bindir, pine::sandbox::makeLinuxHost(probe, noNs));

  auto io = kj::setupAsyncIo();
  Ctx c;
  c.io = &io;
  c.worker = worker;
  c.bindir = bindir;
  c.launcher = launcher;
  c.otherLauncher = otherLauncher;
  c.sandboxes = &sandboxes;
  c.sandboxesNoNs = &sandboxesNoNs;
  c.env = sandboxes.prepare({"main", {}, false, false, {}}).env;  // pine's worker environment, used by every variant
  c.stderrFd = showStderr ? -1 : open("/dev/null", O_WRONLY | O_CLOEXEC);
  bool haveBwrap = access("/usr/bin/bwrap", X_OK) == 0;
  c.bwrapArgs = bwrapArgs(worker, bindir);

  std::vector<Variant> variants = {{Kind::Floor, "floor", "fork+exec+RPC"},
                                   {Kind::Pine, "pine", "prepare+sandbox+RPC"}};
  if (haveBwrap) variants.push_back({Kind::Bwrap, "bwrap", "bwrap+exec+RPC"});
  if (!otherLauncher.empty()) variants.push_back({Kind::OtherLauncher, "pine", "through --also-launcher"});
  if (breakdown) {
    variants.insert(variants.end(), {{Kind::NoNetNs, "pine", "without net namespace"},
                                     {Kind::NoPidNs, "pine", "without pid namespace"},
                                     {Kind::NoMountNs, "pine", "without mount namespace"},
                                     {Kind::NoLandlock, "pine", "without Landlock"},
                                     {Kind::TrivialSeccomp, "pine", "allow-all seccomp filter"},
                                     {Kind::NoNamespaces, "pine", "no namespaces at all"}});
  }

  // Warm up (page cache, first-use costs), then interleave: each round runs
  // every variant once, starting one further along each time, so that machine
  // noise falls on all of them alike.
  for (int w = 0; w < 3; ++w)
    for (auto& v : variants) runOnce(c, v.kind);
  std::vector<std::vector<Sample>> samples(variants.size());
  for (int i = 0; i < iterations; ++i)
    for (size_t k = 0; k < variants.size(); ++k) {
      size_t j = (k + (size_t)i) % variants.size();
      samples[j].push_back(runOnce(c, variants[j].kind));
    }

  auto column = [](const std::vector<Sample>& ss, double Sample::*f) {
    std::vector<double> v;
    for (auto& s : ss) v.push_back(s.*f);
    return v;
  };
  double floorMedian = quantile(column(samples[0], &Sample::first), 0.5);
  printf("sandbox: %d spawns each, interleaved (pine-worker: %s)\n", iterations, worker.c_str());
  printf("  figure: start (before prepare / socketpair) to the worker's first RPC (getTask) at the broker\n");
  std::string kernel = pine::sandbox::describe(probe);
  std::replace(kernel.begin(), kernel.end(), '\n', ';');
  printf("  kernel: %s\n", kernel.c_str());
  for (size_t k = 0; k < variants.size(); ++k) {
    auto first = column(samples[k], &Sample::first);
    double med = quantile(first, 0.5);
    printf("  %-6s %-26s median %6.2f ms  p90 %6.2f ms", variants[k].name, variants[k].label, med,
           quantile(first, 0.9));
    if (k == 1) printf("   ratio %.2fx (target <= 1.5x)", med / floorMedian);
    else if (k > 0) printf("   ratio %.2fx", med / floorMedian);
    printf("\n");
    if (k == 1) {
      auto prep = column(samples[k], &Sample::prepare);
      printf("  %-6s %-26s median %6.2f ms  p90 %6.2f ms\n", "", "prepare alone", quantile(prep, 0.5),
             quantile(prep, 0.9));
    }
  }
  if (!haveBwrap) printf("  bwrap  bubblewrap: not installed\n");
  printf("  split (medians, ms): prepare | start to exec | start to getTask | start to finish handled\n");
  for (size_t k = 0; k < variants.size(); ++k) {
    printf("  %-6s %-26s %6.2f | %6.2f | %6.2f | %6.2f\n", variants[k].name, variants[k].label,
           quantile(column(samples[k], &Sample::prepare), 0.5), quantile(column(samples[k], &Sample::toExec), 0.5),
           quantile(column(samples[k], &Sample::first), 0.5), quantile(column(samples[k], &Sample::done), 0.5));
  }
  if (breakdown) {
    auto plan = *sandboxes.prepare({"main", {}, false, false, {}}).linuxPlan;
    auto steps = stepTimes(sandboxes, iterations);
    printf("  child-side steps, alone (%zu Landlock rules, %zu seccomp instructions, %zu bind mounts), median / p90 ms:\n",
           plan.landlock.rules.size(), plan.seccomp.size(), plan.binds.size());
    for (int k = 0; k < kSteps; ++k)
      printf("    %-36s %6.3f / %6.3f\n", kStepNames[k], quantile(steps[(size_t)k], 0.5),
             quantile(steps[(size_t)k], 0.9));
    // The launcher's own start, before any of those steps, against a small dynamically linked program.
    std::vector<std::string> programs = {launcher, "/bin/true"};
    if (!otherLauncher.empty()) programs.push_back(otherLauncher);
    std::vector<std::vector<double>> starts(programs.size());
    for (int i = 0; i < iterations; ++i)
      for (size_t k = 0; k < programs.size(); ++k) starts[k].push_back(execAlone(programs[k], 1)[0]);
    printf("  a program's start alone (spawn, exec, load, exit; pine-launch exits at the top of main), median / p90 ms:\n");
    for (size_t k = 0; k < programs.size(); ++k)
      printf("    %-36s %6.3f / %6.3f\n", programs[k].c_str(), quantile(starts[k], 0.5), quantile(starts[k], 0.9));
  }
  nftw(top.c_str(), removeEntry, 16, FTW_DEPTH | FTW_PHYS);
  return 0;
}
