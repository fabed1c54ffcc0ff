// The cost of an egress request in a process of its own: exec and sandbox entry of
// pine-egress next to a TLS handshake, against the floor (a bare fork+exec of /bin/true)
// measured in the same run, interleaved; and the model-call path (one POST with a secret
// filled in, to a loopback TLS server, until the answer is in) three ways:
//   old     a fork of this process, whose heap is made pined's size first, running the
//           HTTP code in the child and writing frames on a pipe: pined's egress before
//           pine-egress (supervisor/egress_call.cpp at 8114729)
//   cold    pine-egress started for the request (spawn, sandbox, exec) and given its job
//   warm    pine-egress started ahead of it (as pined keeps one waiting): job to answer
// Every variant reads the same frames to the end and reaps its child; what differs is how
// the process came to be. Timed with the steady clock in this process.
#include <capnp/serialize.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/fd.h"
#include "egress/egress.h"
#include "proto/egress.capnp.h"
#include "sandbox/linux/plan.h"
#include "sandbox/linux/linux_host.h"
#include "sandbox/linux/probe.h"
#include "supervisor/egress_call.h"
#include "supervisor/spawn.h"
#include "tests/egress/test_server.h"

using Clock = std::chrono::steady_clock;
namespace test = pine::egress::test;

namespace {

const std::string kKey = "sk-bench-5f0c2a9e7d3b1486";

[[noreturn]] void die(const std::string& why) {
  fprintf(stderr, "bench-egress: %s\n", why.c_str());
  exit(1);
}

double ms(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  size_t i = (size_t)std::ceil(q * (double)v.size());
  return v[std::min(v.size() - 1, i ? i - 1 : 0)];
}

std::string parentOf(const std::string& p) { return p.substr(0, p.find_last_of('/')); }

std::string selfDir() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) die("cannot read /proc/self/exe");
  return parentOf(std::string(buf, (size_t)n));
}

struct Keys : pine::egress::SecretLookup {
  std::optional<std::string> get(std::string_view name) const override {
    return name == "BENCH_KEY" ? std::optional<std::string>(kKey) : std::nullopt;
  }
};

struct Ctx {
  std::string egress, launcher, bindir, home;
  pine::sandbox::Probe probe;
  test::Identity ca, cert;
  std::string caPem;
  int port = 0;
  pine::egress::EgressRequest call;  // the model call
  pine::egress::EgressPolicy policy;
  int devnull = -1;
};

// Reads EgressFrames until done; false when the stream ended first.
bool readFrames(int fd) {
  capnp::ReaderOptions options;
  options.traversalLimitInWords = (2u << 20) / sizeof(capnp::word);
  for (;;) {
    char probe;
    if (recv(fd, &probe, 1, MSG_PEEK) <= 0) return false;
    capnp::StreamFdMessageReader reader(fd, options);
    if (reader.getRoot<pine::proto::egress::EgressFrame>().isDone()) return true;
  }
}

void reap(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

std::string jobBytes(const Ctx& c, const pine::egress::EgressRequest& req, pine::egress::EgressPolicy policy) {
  policy.caPem = c.caPem;
  auto job = pine::prepareEgressJob(req, policy, Keys());
  if (!job.refused.empty()) die(job.refused);
  auto b = job.message.asBytes();
  return std::string(reinterpret_cast<const char*>(b.begin()), b.size());
}

struct Started {
  pid_t pid;
  int fd;
};

Started startEgress(const Ctx& c, bool sandboxed) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) die("socketpair");
  pine::sandbox::PreparedSandbox box;
  if (sandboxed) box = pine::egressSandbox(c.egress, c.home, *pine::sandbox::makeLinuxHost(c.probe, {}));
  pine::SpawnSpec spec;
  spec.program = c.egress;
  spec.args = {c.egress};
  spec.env = {"LANG=C.UTF-8"};
  spec.fd3 = sv[1];
  spec.stderrFd = c.devnull;
  spec.sandbox = sandboxed ? box.linuxPlan.get() : nullptr;
  spec.launcher = c.launcher;
  spec.label = "egress";
  pid_t pid = pine::spawnChild(spec);
  close(sv[1]);
  return {pid, sv[0]};
}

// One job through a started process, to its done frame and exit.
void runJob(Started s, const std::string& job) {
  if (!pine::writeAll(s.fd, job.data(), job.size())) die("the egress process did not take its job");
  if (!readFrames(s.fd)) die("the egress process ended without an answer");
  close(s.fd);
  reap(s.pid);
}

// The floor: a bare fork and exec of /bin/true, to its exit.
double floorOnce() {
  auto t0 = Clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    char* argv[] = {const_cast<char*>("/bin/true"), nullptr};
    char* envp[] = {nullptr};
    execve(argv[0], argv, envp);
    _exit(127);
  }
  reap(pid);
  return ms(t0, Clock::now());
}

// Exec and sandbox entry: pine-egress started, given a job it refuses before any network
// (a loopback address without allowLoopback), to its done frame and exit.
double startOnce(const Ctx& c, bool sandboxed, const std::string& refusedJob) {
  auto t0 = Clock::now();
  runJob(startEgress(c, sandboxed), refusedJob);
  return ms(t0, Clock::now());
}

// A TLS handshake to the loopback server from this process: TCP connect, full handshake.
double handshakeOnce(const Ctx& c, SSL_CTX* ctx) {
  auto t0 = Clock::now();
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)c.port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) die("connect");
  SSL* ssl = SSL_new(ctx);
  SSL_set_fd(ssl, fd);
  SSL_set_tlsext_host_name(ssl, "localhost");
  if (SSL_connect(ssl) != 1) die("TLS handshake failed");
  double t = ms(t0, Clock::now());
  SSL_shutdown(ssl);
  SSL_free(ssl);
  close(fd);
  return t;
}

// Before pine-egress: a fork of the (pined-sized) process runs the HTTP code itself.
double oldForkOnce(const Ctx& c) {
  auto t0 = Clock::now();
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) die("pipe2");
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    static const pine::redact::Redactor redactor(std::vector<std::string>{});
    pine::egress::EgressPolicy policy = c.policy;
    policy.caPem = c.caPem;
    auto frame = [&](char type, std::string_view payload) {
      char head[5] = {type};
      uint32_t n = (uint32_t)payload.size();
      memcpy(head + 1, &n, 4);
      if (!pine::writeAll(p[1], head, 5) || !pine::writeAll(p[1], payload.data(), payload.size())) _exit(3);
    };
    auto error = pine::egress::perform(
        c.call, policy, Keys(), redactor, [&](const pine::egress::EgressResponseHead&) { frame('H', "{}"); },
        [&](std::string_view chunk) {
          frame('C', chunk);
          return true;
        });
    if (error) frame('E', *error);
    frame('D', "");
    _exit(0);
  }
  close(p[1]);
  bool done = false;
  for (;;) {
    char head[5];
    ssize_t n = read(p[0], head, 5);
    if (n != 5) break;
    uint32_t len;
    memcpy(&len, head + 1, 4);
    std::string payload(len, '\0');
    size_t got = 0;
    while (got < len) {
      ssize_t r = read(p[0], payload.data() + got, len - got);
      if (r <= 0) break;
      got += (size_t)r;
    }
    if (head[0] == 'D') done = true;
  }
  close(p[0]);
  reap(pid);
  if (!done) die("the forked egress child ended without an answer");
  return ms(t0, Clock::now());
}

}  // namespace

int main(int argc, char** argv) {
  int iterations = 100;
  size_t ballastMb = 24;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if ((a == "--iterations" || a == "-n") && i + 1 < argc) iterations = atoi(argv[++i]);
    else if (a == "--ballast-mb" && i + 1 < argc) ballastMb = (size_t)atoi(argv[++i]);
    else {
      fprintf(stderr,
              "usage: bench-egress [--iterations N] [--ballast-mb MB]\n"
              "  default: 100 rounds; the old fork path forks a process with MB of touched heap (24, about\n"
              "  pined's resident size); pine-egress and pine-launch from <builddir>/bin\n");
      return 2;
    }
  }
  if (iterations < 1) die("--iterations must be at least 1");
  signal(SIGPIPE, SIG_IGN);
  Ctx c;
  // <builddir>/bench/egress/bench-egress; the programs are in <builddir>/bin.
  c.bindir = parentOf(parentOf(selfDir())) + "/bin";
  c.egress = c.bindir + "/pine-egress";
  c.launcher = c.bindir + "/pine-launch";
  for (auto& p : {c.egress, c.launcher})
    if (access(p.c_str(), X_OK) != 0) die("no " + p + " (build bin/pine-egress and bin/pine-launch)");
  char tmpl[] = "/tmp/pine-bench-egress.XXXXXX";
  if (!mkdtemp(tmpl)) die("mkdtemp");
  c.home = std::string(tmpl) + "/home";
  std::filesystem::create_directories(c.home);
  c.probe = pine::sandbox::probeKernel();
  c.devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);

  c.ca = test::makeCa("pine bench CA");
  c.cert = test::makeServerCert(c.ca);
  const std::string caFile = std::string(tmpl) + "/ca.pem";
  test::writePem(caFile, c.ca.cert.get());
  {
    std::ifstream in(caFile);
    std::stringstream ss;
    ss << in.rdbuf();
    c.caPem = ss.str();
  }
  test::TestServer server(&c.cert);
  c.port = server.port();
  // A model call: a POST of a few kilobytes with the key in a header; the server echoes it.
  c.call.method = "POST";
  c.call.url = "https://127.0.0.1:" + std::to_string(c.port) + "/echo";
  c.call.headers = {{"Authorization", "Bearer ${secret:BENCH_KEY}"}, {"Content-Type", "application/json"}};
  c.call.body = "{\"model\":\"bench\",\"messages\":[{\"role\":\"user\",\"content\":\"" + std::string(3000, 'x') + "\"}]}";
  c.policy.allowLoopback = true;
  c.policy.connectTimeoutMs = 5000;
  c.policy.totalTimeoutMs = 20000;
  const std::string modelJob = jobBytes(c, c.call, c.policy);
  pine::egress::EgressRequest refused = c.call;
  pine::egress::EgressPolicy noLoopback = c.policy;
  noLoopback.allowLoopback = false;
  const std::string refusedJob = jobBytes(c, refused, noLoopback);

  // pined's heap, so that the old path's fork copies page tables of its size.
  std::vector<char> ballast(ballastMb << 20);
  for (size_t i = 0; i < ballast.size(); i += 4096) ballast[i] = (char)i;

  SSL_CTX* client = SSL_CTX_new(TLS_client_method());
  X509_STORE_add_cert(SSL_CTX_get_cert_store(client), c.ca.cert.get());
  SSL_CTX_set_verify(client, SSL_VERIFY_PEER, nullptr);
  SSL_CTX_set_session_cache_mode(client, SSL_SESS_CACHE_OFF);  // a full handshake every time

  enum Kind { Floor, Start, StartBare, Handshake, Old, Cold, Warm, kKinds };
  const char* names[kKinds] = {"floor: fork+exec /bin/true, to its exit",
                               "pine-egress: spawn + sandbox + exec + a refused job",
                               "pine-egress: the same without the sandbox",
                               "TLS handshake to loopback (TCP + full handshake)",
                               "model call, old: fork of pined + HTTP in the child",
                               "model call, cold: pine-egress started for it",
                               "model call, warm: pine-egress waiting (pined's way)"};
  auto once = [&](int k) -> double {
    switch (k) {
      case Floor: return floorOnce();
      case Start: return startOnce(c, true, refusedJob);
      case StartBare: return startOnce(c, false, refusedJob);
      case Handshake: return handshakeOnce(c, client);
      case Old: return oldForkOnce(c);
      case Cold: {
        auto t0 = Clock::now();
        runJob(startEgress(c, true), modelJob);
        return ms(t0, Clock::now());
      }
      case Warm: {
        Started s = startEgress(c, true);
        usleep(30000);  // untimed: it has exec'd, loaded its libraries and waits for the job
        auto t0 = Clock::now();
        runJob(s, modelJob);
        return ms(t0, Clock::now());
      }
    }
    return 0;
  };
  for (int w = 0; w < 3; ++w)
    for (int k = 0; k < kKinds; ++k) once(k);
  std::vector<std::vector<double>> samples(kKinds);
  for (int i = 0; i < iterations; ++i)
    for (int j = 0; j < kKinds; ++j) {
      int k = (j + i) % kKinds;
      samples[(size_t)k].push_back(once(k));
    }

  double floorMed = quantile(samples[Floor], 0.5);
  std::string kernel = pine::sandbox::describe(c.probe);
  std::replace(kernel.begin(), kernel.end(), '\n', ';');
  printf("egress: %d rounds, interleaved (pine-egress: %s; old path forks %zu MiB of heap)\n", iterations,
         c.egress.c_str(), ballastMb);
  printf("  kernel: %s\n", kernel.c_str());
  for (int k = 0; k < kKinds; ++k) {
    double med = quantile(samples[(size_t)k], 0.5);
    printf("  %-54s median %7.2f ms  p90 %7.2f ms  ratio %5.2fx\n", names[k], med, quantile(samples[(size_t)k], 0.9),
           med / floorMed);
  }
  double old = quantile(samples[Old], 0.5);
  printf("  model call against the old fork (medians): cold %+.2f ms, warm %+.2f ms (target: within +2 ms)\n",
         quantile(samples[Cold], 0.5) - old, quantile(samples[Warm], 0.5) - old);
  printf("  sandbox entry alone (medians): %.2f ms\n",
         quantile(samples[Start], 0.5) - quantile(samples[StartBare], 0.5));
  SSL_CTX_free(client);
  std::filesystem::remove_all(tmpl);
  return 0;
}
