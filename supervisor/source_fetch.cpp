#include "supervisor/source_fetch.h"

#include <kj/debug.h>

#include "common/http_validator.h"
#include "common/log.h"
#include "common/url_origin.h"
#include "common/web_address.h"
#include "supervisor/egress_call.h"
#include "supervisor/supervisor.h"

namespace pine {
namespace {

constexpr size_t kMaxUrl = 8192;
constexpr size_t kMaxPage = 8 << 20;  // a page larger than this is an error, not an event
}  // namespace

SourcePoll sourcePoll(const config::Source& s, const std::string& url, const std::string& etag,
                      const std::string& lastModified) {
  SourcePoll out;
  std::string target = url.empty() ? s.url : url;
  if (target.size() > kMaxUrl || target.find("${") != std::string::npos) {
    out.refused = "the address is over 8 KiB or holds a placeholder";
    return out;
  }
  // The token goes with every request, so every request goes where the owner configured.
  if (!sameOrigin(s.url, target)) {
    out.refused = "only " + urlOrigin(s.url).value_or(s.url) + " is fetched for source '" + s.name + "'";
    return out;
  }
  if (!sendableValidator(etag) || !sendableValidator(lastModified)) {
    out.refused = "an ETag or Last-Modified value over 1 KiB or with a control character";
    return out;
  }
  std::string origin = *urlOrigin(s.url);
  std::string host = origin.substr(origin.find("://") + 3);
  host = host.substr(0, host.rfind(':'));
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  out.request.method = "GET";
  out.request.url = target;
  if (!etag.empty()) out.request.headers.emplace_back("If-None-Match", etag);
  if (!lastModified.empty()) out.request.headers.emplace_back("If-Modified-Since", lastModified);
  if (!s.tokenSecret.empty()) {
    std::string value = "${secret:" + s.tokenSecret + "}";
    out.request.headers.emplace_back(s.tokenHeader.empty() ? "Authorization" : s.tokenHeader,
                                     s.tokenHeader.empty() ? "Bearer " + value : value);
  }
  out.policy.allowHosts = {host};
  // An address confirmed as public stays public: if its name later resolves into the local
  // network, egress refuses to connect.
  out.policy.allowLoopback = out.policy.allowPrivate = s.localNetwork;
  out.policy.allowPlainHttp = origin.rfind("http://", 0) == 0;
  out.policy.totalTimeoutMs = 60 * 1000;
  out.policy.idleTimeoutMs = 30 * 1000;
  out.policy.maxResponseBytes = kMaxPage;
  return out;
}

kj::Promise<void> pollSource(
    Supervisor& sup, EgressProcesses& egress,
    capnp::CallContext<proto::Supervisor::PollSourceParams, proto::Supervisor::PollSourceResults> context) {
  auto p = context.getParams();
  KJ_REQUIRE(p.getUrl().size() <= kMaxUrl && p.getEtag().size() <= kMaxHttpValidator &&
                 p.getLastModified().size() <= kMaxHttpValidator,
             "pollSource: an argument is too long");
  auto cfg = sup.config();
  KJ_REQUIRE(cfg != nullptr, "pollSource: no configuration is loaded");
  const config::Source* source = nullptr;
  for (const auto& s : cfg->pine.sources)
    if (s.name == p.getSource().cStr() && s.type == "http") source = &s;
  KJ_REQUIRE(source != nullptr, "pollSource: no http source of that name", p.getSource().cStr());
  SourcePoll poll = sourcePoll(*source, p.getUrl(), p.getEtag(), p.getLastModified());
  if (!poll.refused.empty()) {
    audit("egress.refused", {{"purpose", "source:" + source->name}, {"reason", poll.refused}});
    EgressAnswer refused;
    refused.error = "GET " + std::string(p.getUrl().size() ? p.getUrl().cStr() : source->url.c_str()) + ": " + poll.refused;
    refused.done = true;
    setAnswer(context.getResults(), refused);
    return kj::READY_NOW;
  }
  return egress.run(poll.request, kj::mv(poll.policy), p.getSink(), "source:" + source->name)
      .then([context](EgressAnswer a) mutable { setAnswer(context.getResults(), a); });
}

}  // namespace pine
