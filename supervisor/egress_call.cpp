#include "supervisor/egress_call.h"

#include <fcntl.h>
#include <kj/debug.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "common/fd.h"
#include "common/log.h"
#include "supervisor/egress/egress.h"
#include "supervisor/supervisor.h"

namespace pine {
namespace {

constexpr size_t kMaxBody = 16 << 20;

// "https://Host:443/x" -> "https://host:443"; empty when it cannot be read.
std::string originOf(const std::string& url) {
  size_t scheme = url.find("://");
  if (scheme == std::string::npos) return "";
  std::string s = url.substr(0, scheme);
  for (auto& c : s) c = (char)tolower((unsigned char)c);
  size_t start = scheme + 3;
  size_t end = url.find_first_of("/?#", start);
  std::string authority = url.substr(start, end == std::string::npos ? std::string::npos : end - start);
  if (size_t at = authority.rfind('@'); at != std::string::npos) authority = authority.substr(at + 1);
  for (auto& c : authority) c = (char)tolower((unsigned char)c);
  // A port is a ':' after the host; an IPv6 literal's colons sit inside [...].
  size_t hostEnd = authority.rfind(']');
  bool hasPort = authority.find(':', hostEnd == std::string::npos ? 0 : hostEnd) != std::string::npos;
  if (!hasPort) authority += s == "https" ? ":443" : s == "http" ? ":80" : "";
  return s + "://" + authority;
}

void frame(int fd, char type, std::string_view payload) {
  char head[5];
  head[0] = type;
  uint32_t n = (uint32_t)payload.size();
  memcpy(head + 1, &n, 4);
  if (!writeAll(fd, head, 5) || !writeAll(fd, payload.data(), payload.size())) _exit(3);  // pined hung up
}

struct StoreLookup final : egress::SecretLookup {
  const secrets::SecretStore& store;
  explicit StoreLookup(const secrets::SecretStore& s) : store(s) {}
  std::optional<std::string> get(std::string_view name) const override { return store.get(name); }
};

// The forked child: makes the request with pined's secrets and reports on `out`. Never returns.
[[noreturn]] void egressChild(int out, const egress::EgressRequest& req, const egress::EgressPolicy& policy,
                              const secrets::SecretStore& store, const redact::Redactor& redactor) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  signal(SIGPIPE, SIG_IGN);
  // Nothing of pined's but the result pipe: not the broker's link, not the sockets.
  syscall(SYS_close_range, 3u, (unsigned)out - 1, 0);
  syscall(SYS_close_range, (unsigned)out + 1, ~0u, 0);
  StoreLookup lookup(store);
  auto error = egress::perform(
      req, policy, lookup, redactor,
      [out](const egress::EgressResponseHead& head) {
        nlohmann::json h = {{"status", head.status}, {"headers", nlohmann::json::array()}};
        for (auto& [k, v] : head.headers) h["headers"].push_back({k, v});
        frame(out, 'H', h.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      },
      [out](std::string_view chunk) {
        frame(out, 'C', chunk);
        return true;
      });
  if (error) frame(out, 'E', *error);
  frame(out, 'D', "");
  _exit(0);
}

struct Call {
  Supervisor& sup;
  pid_t pid;
  kj::Own<kj::AsyncInputStream> in;
  proto::ByteSink::Client sink;
  long status = 0;
  nlohmann::json headers = nlohmann::json::array();
  std::string error;
  bool done = false;
  char head[5];
  kj::Array<kj::byte> payload;
  Call(Supervisor& s, pid_t p, kj::Own<kj::AsyncInputStream> i, proto::ByteSink::Client k)
      : sup(s), pid(p), in(kj::mv(i)), sink(kj::mv(k)) {}
  // Cancelled or finished: the child has nothing more to do.
  ~Call() noexcept(false) { sup.killChild(pid, "egress"); }
};

kj::Promise<void> pump(Call& c) {
  return c.in->tryRead(c.head, 5, 5).then([&c](size_t n) -> kj::Promise<void> {
    if (n < 5) return kj::READY_NOW;  // the child ended; `done` tells whether it finished
    uint32_t len;
    memcpy(&len, c.head + 1, 4);
    KJ_REQUIRE(len <= kMaxBody + 4096, "egress: oversized frame from the egress process");
    c.payload = kj::heapArray<kj::byte>(len);
    return c.in->tryRead(c.payload.begin(), len, len).then([&c, len](size_t got) -> kj::Promise<void> {
      if (got < len) return kj::READY_NOW;
      std::string_view text(reinterpret_cast<const char*>(c.payload.begin()), len);
      switch (c.head[0]) {
        case 'H': {
          auto h = nlohmann::json::parse(text, nullptr, false);
          if (!h.is_discarded()) {
            c.status = h.value("status", 0L);
            c.headers = h.value("headers", nlohmann::json::array());
          }
          return pump(c);
        }
        case 'C': {
          auto req = c.sink.writeRequest();
          req.setChunk(c.payload.asPtr());
          return req.send().then([&c]() { return pump(c); });
        }
        case 'E':
          c.error = std::string(text);
          return pump(c);
        case 'D':
          c.done = true;
          return kj::READY_NOW;
        default:
          KJ_FAIL_REQUIRE("egress: unknown frame from the egress process");
      }
    });
  });
}

// Forks the child that performs `req` under `policy`; the body streams to `sink`.
kj::Promise<kj::Own<Call>> startEgress(Supervisor& sup, kj::AsyncIoContext& io, const egress::EgressRequest& req,
                                       const egress::EgressPolicy& policy, proto::ByteSink::Client sink,
                                       const std::string& purpose) {
  int fds[2];
  KJ_SYSCALL(pipe2(fds, O_CLOEXEC));
  auto redactor = sup.redactorSnapshot();
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    KJ_FAIL_SYSCALL("fork", errno);
  }
  if (pid == 0) egressChild(fds[1], req, policy, sup.secrets(), *redactor);
  close(fds[1]);
  sup.adoptChild(pid, "egress");
  audit("egress.request",
        {{"method", req.method}, {"origin", originOf(req.url)}, {"purpose", purpose}, {"process_pid", pid}});
  auto call = kj::heap<Call>(sup, pid,
                             io.lowLevelProvider->wrapInputFd(fds[0], kj::LowLevelAsyncIoProvider::TAKE_OWNERSHIP |
                                                                          kj::LowLevelAsyncIoProvider::ALREADY_CLOEXEC),
                             kj::mv(sink));
  auto& c = *call;
  return pump(c).then([call = kj::mv(call)]() mutable { return kj::mv(call); });
}

template <typename Results>
void answer(Results res, const Call& c) {
  res.setStatus((uint16_t)c.status);
  auto list = res.initHeaders((unsigned)c.headers.size());
  for (unsigned i = 0; i < c.headers.size(); ++i) {
    list[i].setName(c.headers[i][0].template get<std::string>());
    list[i].setValue(c.headers[i][1].template get<std::string>());
  }
  res.setError(c.done ? c.error : "the egress process ended without an answer");
}

}  // namespace

kj::Promise<void> runEgressCall(Supervisor& sup, kj::AsyncIoContext& io,
                                capnp::CallContext<proto::Supervisor::EgressParams, proto::Supervisor::EgressResults> context) {
  auto p = context.getParams();
  auto r = p.getRequest();
  KJ_REQUIRE(r.getMethod().size() > 0 && r.getMethod().size() <= 16, "egress: bad method");
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
  policy.caFile = sup.egressCaFile();
  std::string origin = originOf(req.url);
  for (auto& base : sup.providerBaseUrls())
    if (!origin.empty() && originOf(base) == origin) {
      policy.allowLoopback = policy.allowPrivate = policy.allowPlainHttp = true;
    }
  // Model calls stream long answers: a generous total, and an idle limit that ends a stalled
  // stream. The run's own time limit bounds them too.
  policy.totalTimeoutMs = 15 * 60 * 1000;
  policy.idleTimeoutMs = 90 * 1000;
  return startEgress(sup, io, req, policy, p.getSink(), "model").then([context](kj::Own<Call> c) mutable {
    answer(context.getResults(), *c);
  });
}

kj::Promise<void> runDownloadCall(Supervisor& sup, kj::AsyncIoContext& io,
                                  capnp::CallContext<proto::Supervisor::DownloadParams, proto::Supervisor::DownloadResults> context) {
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
  policy.caFile = sup.egressCaFile();
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
  return startEgress(sup, io, req, policy, p.getSink(), "download:" + agent).then([context](kj::Own<Call> c) mutable {
    answer(context.getResults(), *c);
  });
}

}  // namespace pine
