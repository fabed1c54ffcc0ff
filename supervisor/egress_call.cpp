#include "supervisor/egress_call.h"

#include <capnp/message.h>
#include <capnp/serialize-async.h>
#include <capnp/serialize.h>
#include <kj/debug.h>
#include <openssl/crypto.h>
#include <poll.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "common/sanitizer_env.h"
#include "common/fd.h"
#include "common/log.h"
#include "common/url_origin.h"
#include "egress/request/placeholders.h"
#include "proto/egress.capnp.h"
#include "sandbox/policy.h"
#include "supervisor/spawn.h"
#include "supervisor/supervisor.h"
#include "common/cloexec.h"

namespace pine {
namespace {

constexpr size_t kMaxBody = 16 << 20;
constexpr size_t kMaxCaBundle = 4 << 20;
// A frame carries at most 256 KiB of body (or the head's 256 KiB of headers): 2 MiB is room
// enough, and what a compromised egress process can make pined allocate at once.
constexpr uint64_t kMaxFrameWords = (2u << 20) / sizeof(capnp::word);
constexpr unsigned kMaxHeaders = 1000;

// The request's origin as the broker reads it (common/url_origin.h); empty when it cannot be read.
std::string originOf(const std::string& url) { return urlOrigin(url).value_or(""); }

std::string shortUrl(std::string_view url) { return egress::urlForMessages(url); }

struct StoreLookup final : egress::SecretLookup {
  const secrets::SecretStore& store;
  explicit StoreLookup(const secrets::SecretStore& s) : store(s) {}
  std::optional<std::string> get(std::string_view name) const override { return store.get(name); }
};

std::string ownerHome() {
  if (struct passwd* pw = getpwuid(getuid())) return pw->pw_dir;
  const char* h = getenv("HOME");
  return h ? h : "";
}

std::string dirOf(const std::string& path) { return path.substr(0, path.find_last_of('/')); }

// The whole environment of an egress process: nothing of pined's.
std::vector<std::string> egressEnvironment() {
  std::vector<std::string> env = {"LANG=C.UTF-8"};
  for (auto& e : sanitizerEnvironment(true)) env.push_back(std::move(e));
  return env;
}

using Answer = EgressAnswer;

// One running egress process and the relay of its frames.
struct Call {
  Supervisor& sup;
  pid_t pid = 0;
  kj::Own<kj::AsyncIoStream> stream;
  proto::ByteSink::Client sink;
  kj::Array<capnp::word> job;
  Answer answer;
  bool sawHead = false;
  Call(Supervisor& s, proto::ByteSink::Client k) : sup(s), sink(kj::mv(k)) {}
  // Cancelled or finished: the process has nothing more to do.
  ~Call() noexcept(false) {
    if (job.size() > 0) OPENSSL_cleanse(job.begin(), job.asBytes().size());
    if (pid > 0) sup.killChild(pid, "egress");
  }
};

// Reads the next frame; only the framing is looked at, a chunk goes to the sink as it is.
kj::Promise<void> relay(Call& c) {
  capnp::ReaderOptions options;
  options.traversalLimitInWords = kMaxFrameWords;
  options.nestingLimit = 8;
  return capnp::tryReadMessage(*c.stream, options)
      .then([&c](kj::Maybe<kj::Own<capnp::MessageReader>> maybe) -> kj::Promise<void> {
        KJ_IF_MAYBE(message, maybe) {
          auto frame = (*message)->getRoot<proto::egress::EgressFrame>();
          switch (frame.which()) {
            case proto::egress::EgressFrame::HEAD: {
              auto head = frame.getHead();
              KJ_REQUIRE(!c.sawHead && head.getHeaders().size() <= kMaxHeaders, "a second head, or too many headers");
              c.sawHead = true;
              c.answer.status = head.getStatus();
              for (auto h : head.getHeaders()) c.answer.headers.emplace_back(h.getName(), h.getValue());
              return relay(c);
            }
            case proto::egress::EgressFrame::CHUNK: {
              auto req = c.sink.writeRequest();
              req.setChunk(frame.getChunk());
              return req.send().then([&c]() { return relay(c); });
            }
            case proto::egress::EgressFrame::ERROR:
              c.answer.error = frame.getError();
              return relay(c);
            case proto::egress::EgressFrame::DONE:
              c.answer.done = true;
              return kj::READY_NOW;
          }
          KJ_FAIL_REQUIRE("a frame of an unknown kind");
        }
        return kj::READY_NOW;  // the process ended; `done` tells whether it finished
      });
}

Answer refusedAnswer(std::string why) {
  Answer a;
  a.error = std::move(why);
  a.done = true;
  return a;
}

// Hands the job for `req` under `policy` to a pine-egress process and relays its answer; the
// body streams to `sink`.
kj::Promise<Answer> startEgress(Supervisor& sup, EgressProcesses& processes, const egress::EgressRequest& req,
                                egress::EgressPolicy policy, proto::ByteSink::Client sink, const std::string& purpose) {
  const std::string what = req.method + " " + shortUrl(req.url);
  if (!sup.egressCaFile().empty()) {
    try {
      policy.caPem = readFile(sup.egressCaFile());
    } catch (std::exception& e) {
      return refusedAnswer(what + ": cannot read the CA bundle (--egress-ca): " + e.what());
    }
    if (policy.caPem.size() > kMaxCaBundle || policy.caPem.empty())
      return refusedAnswer(what + ": the CA bundle " + sup.egressCaFile() + " is empty or over 4 MiB");
  }
  auto call = kj::heap<Call>(sup, kj::mv(sink));
  {
    PreparedJob job = prepareEgressJob(req, policy, StoreLookup(sup.secrets()));
    if (!job.refused.empty()) return refusedAnswer(sup.redactor().redact(job.refused));
    call->job = kj::mv(job.message);
  }
  EgressProcesses::Started process;
  try {
    process = processes.take();
  } catch (std::exception& e) {
    // Fail closed: without its sandbox no egress process runs.
    audit("sandbox.refused", {{"process", "egress"}, {"purpose", purpose}, {"reason", e.what()}});
    spdlog::error("egress ({}): not started: {}", purpose, e.what());
    return refusedAnswer(what + ": the egress process could not be started: " + e.what());
  }
  call->pid = process.pid;
  audit("egress.request",
        {{"method", req.method}, {"origin", originOf(req.url)}, {"purpose", purpose}, {"process_pid", call->pid}});
  call->stream = processes.io().lowLevelProvider->wrapSocketFd(
      process.fd.release(), kj::LowLevelAsyncIoProvider::TAKE_OWNERSHIP | kj::LowLevelAsyncIoProvider::ALREADY_CLOEXEC);
  auto& c = *call;
  auto bytes = c.job.asBytes();
  return c.stream->write(bytes.begin(), bytes.size())
      .then([&c]() {
        OPENSSL_cleanse(c.job.begin(), c.job.asBytes().size());  // pined keeps no extra copy of the values
        c.job = nullptr;
        return relay(c);
      })
      .then(
          [call = kj::mv(call), &processes]() mutable -> Answer {
            Answer a = kj::mv(call->answer);
            if (a.done) processes.startNextLater();
            else a.error = "the egress process ended without an answer";
            return a;
          },
          [](kj::Exception&& e) -> Answer {
            // A process that went away mid-job, or sent what is not a frame: the request ends here.
            spdlog::warn("egress: {}", e.getDescription().cStr());
            return refusedAnswer("the egress process ended without an answer (" +
                                 std::string(e.getDescription().cStr()) + ")");
          });
}

// Why the request may not carry the secrets it names, or nullopt: each must be the key of a
// provider configured at the request's origin.
std::optional<std::string> keyProblem(Supervisor& sup, const egress::EgressRequest& req, const std::string& origin) {
  egress::Templates templates;
  if (egress::checkTemplates(req, templates)) return std::nullopt;  // refused later, saying why
  auto cfg = sup.config();
  for (const std::string& name : templates.names()) {
    bool ok = false;
    if (cfg)
      for (const auto& [id, provider] : cfg->models.providers)
        if (provider.keySecret == name && !origin.empty() && originOf(provider.baseUrl) == origin) ok = true;
    if (!ok) return "the secret " + name + " is not the key of a model provider at " + (origin.empty() ? "this address" : origin);
  }
  return std::nullopt;
}

}  // namespace

kj::Promise<EgressAnswer> EgressProcesses::run(const egress::EgressRequest& request, egress::EgressPolicy policy,
                                               proto::ByteSink::Client sink, const std::string& purpose) {
  return startEgress(sup_, *this, request, kj::mv(policy), kj::mv(sink), purpose);
}

PreparedJob prepareEgressJob(const egress::EgressRequest& request, const egress::EgressPolicy& policy,
                             const egress::SecretLookup& secrets) {
  PreparedJob out;
  egress::Templates templates;
  if (auto why = egress::checkTemplates(request, templates)) {
    out.refused = request.method + " " + shortUrl(request.url) + ": " + *why;
    return out;
  }
  capnp::MallocMessageBuilder message;
  auto job = message.initRoot<proto::egress::EgressJob>();
  auto r = job.initRequest();
  r.setMethod(request.method);
  r.setUrl(request.url);
  auto headers = r.initHeaders((unsigned)request.headers.size());
  for (unsigned i = 0; i < request.headers.size(); ++i) {
    headers[i].setName(request.headers[i].first);
    headers[i].setValue(request.headers[i].second);
  }
  r.setBody(kj::arrayPtr(reinterpret_cast<const kj::byte*>(request.body.data()), request.body.size()));
  auto p = job.initPolicy();
  p.setAllowPrivate(policy.allowPrivate);
  p.setAllowLoopback(policy.allowLoopback);
  p.setAllowPlainHttp(policy.allowPlainHttp);
  auto hosts = p.initAllowHosts((unsigned)policy.allowHosts.size());
  for (unsigned i = 0; i < policy.allowHosts.size(); ++i) hosts.set(i, policy.allowHosts[i]);
  p.setConnectTimeoutMs(policy.connectTimeoutMs);
  p.setTotalTimeoutMs(policy.totalTimeoutMs);
  p.setIdleTimeoutMs(policy.idleTimeoutMs);
  p.setMaxResponseBytes(policy.maxResponseBytes);
  p.setCaBundle(kj::arrayPtr(reinterpret_cast<const kj::byte*>(policy.caPem.data()), policy.caPem.size()));
  // Only what the placeholders name, looked up now that they sit where they may.
  std::vector<std::pair<std::string, std::string>> values;
  for (const std::string& name : templates.names())
    if (auto v = secrets.get(name)) values.emplace_back(name, std::move(*v));
  auto list = job.initSecrets((unsigned)values.size());
  for (unsigned i = 0; i < values.size(); ++i) {
    list[i].setName(values[i].first);
    list[i].setValue(values[i].second);
    OPENSSL_cleanse(values[i].second.data(), values[i].second.size());
  }
  out.message = capnp::messageToFlatArray(message);
  for (auto segment : message.getSegmentsForOutput())
    OPENSSL_cleanse(const_cast<capnp::word*>(segment.begin()), segment.asBytes().size());
  return out;
}

EgressProcesses::EgressProcesses(Supervisor& sup, kj::AsyncIoContext& io) : sup_(sup), io_(io), tasks_(*this) {}

EgressProcesses::~EgressProcesses() noexcept(false) {
  KJ_IF_MAYBE(w, waiting_) { sup_.killChild(w->pid, "egress"); }
}

void EgressProcesses::taskFailed(kj::Exception&& e) {
  spdlog::warn("egress: the next egress process was not started: {}", e.getDescription().cStr());
}

EgressProcesses::Started EgressProcesses::start() {
  const std::string program = dirOf(sup_.options().workerProgram) + "/pine-egress";
  const sandbox::PreparedSandbox box = egressSandbox(program, sup_.home().root, sup_.sandboxHost());
  int sv[2];
  if (socketpairCloexec(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
    throw std::runtime_error(std::string("socketpair: ") + strerror(errno));
  kj::AutoCloseFd ours(sv[0]), theirs(sv[1]);
  SpawnSpec spec;
  spec.program = program;
  spec.args = {program};
  spec.env = egressEnvironment();
  spec.fd3 = theirs.get();
  sup_.useSandbox(spec, box);
  // The programs are installed side by side: pine-launch is beside pine-egress unless pined was told.
  spec.launcher = sup_.options().launcherProgram.empty() ? dirOf(program) + "/pine-launch" : sup_.options().launcherProgram;
  spec.label = "egress";
  Started s;
  s.pid = spawnChild(spec);
  s.fd = kj::mv(ours);
  sup_.adoptChild(s.pid, "egress");
  return s;
}

EgressProcesses::Started EgressProcesses::take() {
  KJ_IF_MAYBE(w, waiting_) {
    Started s = kj::mv(*w);
    waiting_ = nullptr;
    // Still there and silent (it writes nothing before its job): then it is the one. A process
    // that has gone makes its end readable (EOF), so POLLIN sees that too, on every platform.
    pollfd p = {s.fd.get(), POLLIN, 0};
    if (poll(&p, 1, 0) == 0) return s;
    sup_.killChild(s.pid, "egress");
  }
  return start();
}

void EgressProcesses::startNextLater() {
  if (waiting_ != nullptr || starting_) return;
  starting_ = true;
  tasks_.add(kj::evalLater([this]() {
    starting_ = false;
    if (waiting_ == nullptr) waiting_ = start();
  }));
}

sandbox::EgressPaths egressPaths(const std::string& program, const std::string& pineHome) {
  sandbox::EgressPaths paths;
  paths.program = program;
  paths.pineHome = pineHome;
  paths.userHome = ownerHome();
  return paths;
}

sandbox::PreparedSandbox egressSandbox(const std::string& program, const std::string& pineHome,
                                       const sandbox::SandboxHost& host) {
  sandbox::PreparedSandbox box;
  box.policy = sandbox::egressPolicy(egressPaths(program, pineHome));
  box.cwd = "/";
  sandbox::LaunchParams launch;
  launch.cwd = "/";
  // No masks: the few denied paths inside readable trees (/etc/ssl/private) are Landlock's.
  // Seatbelt: it writes nothing of git's and reads no instruction file, but never a secrets file.
  launch.seatbelt = sandbox::SeatbeltOptions{false, false, true};
  host.launch(box, launch);
  return box;
}

kj::Promise<void> EgressProcesses::egress(
    capnp::CallContext<proto::Supervisor::EgressParams, proto::Supervisor::EgressResults> context) {
  Supervisor& sup = sup_;
  auto p = context.getParams();
  auto r = p.getRequest();
  KJ_REQUIRE(r.getMethod().size() > 0 && r.getMethod().size() <= 16, "egress: bad method");
  // FTP is an ftp source's (ftp_list.h), with the login pined puts in; never the broker's to ask for.
  KJ_REQUIRE(!r.getMethod().startsWith("FTP-"), "egress: FTP requests are made for ftp sources only");
  KJ_REQUIRE(r.getUrl().size() > 0 && r.getUrl().size() <= 8192, "egress: the URL is empty or over 8 KiB");
  KJ_REQUIRE(r.getHeaders().size() <= 64, "egress: more than 64 headers");
  KJ_REQUIRE(r.getBody().size() <= kMaxBody, "egress: body over 16 MiB");
  egress::EgressRequest req;
  req.method = r.getMethod();
  req.url = r.getUrl();
  for (auto h : r.getHeaders()) {
    KJ_REQUIRE(h.getName().size() <= 256 && h.getValue().size() <= 8192, "egress: header too long");
    req.headers.emplace_back(h.getName(), h.getValue());
  }
  req.body.assign(reinterpret_cast<const char*>(r.getBody().begin()), r.getBody().size());

  // Loopback, private addresses and plain http only for a provider the owner configured there
  // (a model server on this machine); everything else must be public https.
  egress::EgressPolicy policy;
  std::string origin = originOf(req.url);
  for (auto& base : sup.providerBaseUrls())
    if (!origin.empty() && originOf(base) == origin) {
      policy.allowLoopback = policy.allowPrivate = policy.allowPlainHttp = true;
    }
  // A secret goes only to the provider whose key it is: the broker cannot send the bot token, or
  // any other value of .env, to an address of its choosing.
  if (auto why = keyProblem(sup, req, origin)) {
    audit("egress.refused", {{"purpose", "model"}, {"origin", origin}, {"reason", *why}});
    setAnswer(context.getResults(), refusedAnswer(req.method + " " + shortUrl(req.url) + ": " + *why));
    return kj::READY_NOW;
  }
  // Model calls stream long answers: a generous total, and an idle limit that ends a stalled
  // stream. The run's own time limit bounds them too.
  policy.totalTimeoutMs = 15 * 60 * 1000;
  policy.idleTimeoutMs = 90 * 1000;
  return startEgress(sup, *this, req, policy, p.getSink(), "model").then([context](Answer a) mutable {
    setAnswer(context.getResults(), a);
  });
}

kj::Promise<void> EgressProcesses::download(
    capnp::CallContext<proto::Supervisor::DownloadParams, proto::Supervisor::DownloadResults> context) {
  Supervisor& sup = sup_;
  auto p = context.getParams();
  std::string agent = p.getAgent();
  std::string url = p.getUrl();
  KJ_REQUIRE(!url.empty() && url.size() <= 8192, "download: the URL is empty or over 8 KiB");
  auto cfg = sup.config();
  KJ_REQUIRE(cfg != nullptr && cfg->agents.count(agent) > 0, "download: no such agent", agent);
  // Re-checked here whatever the broker decided: no secret is filled into a download, the address
  // classes are pined's to enforce, and the size cap is the owner's.
  KJ_REQUIRE(url.find("${") == std::string::npos, "download: placeholders are not filled into downloads");
  const auto& a = cfg->agents.at(agent);
  egress::EgressPolicy policy;
  std::string origin = originOf(url);
  for (const auto& [name, server] : a.mcpServers) {
    if (!server.url.empty() && !origin.empty() && originOf(server.url) == origin)
      policy.allowLoopback = policy.allowPrivate = policy.allowPlainHttp = true;  // the owner's own server
    if (server.bundled == "web" && server.allowPrivate) policy.allowPrivate = policy.allowPlainHttp = true;
  }
  policy.maxResponseBytes = (size_t)cfg->pine.limits.maxDownloadMb << 20;
  policy.totalTimeoutMs = 30 * 60 * 1000;
  policy.idleTimeoutMs = 60 * 1000;
  egress::EgressRequest req;
  req.method = "GET";
  req.url = url;
  return startEgress(sup, *this, req, policy, p.getSink(), "download:" + agent).then([context](Answer a) mutable {
    setAnswer(context.getResults(), a);
  });
}

}  // namespace pine
