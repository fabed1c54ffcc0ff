#include "egress/job.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/exception.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "egress/egress.h"
#include "proto/egress.capnp.h"
#include "redact/redactor.h"

namespace pine::egress {
namespace {

// The largest job pined sends: a 16 MiB body, 8 KiB of URL, 64 headers of 8 KiB, a CA
// bundle of at most 4 MiB, with room for the framing.
constexpr uint64_t kMaxJobWords = (24ull << 20) / sizeof(capnp::word);
constexpr std::size_t kMaxChunk = 256 << 10;  // per frame, so that pined's frame limit holds

struct JobSecrets final : SecretLookup {
  std::map<std::string, std::string, std::less<>> values;
  std::optional<std::string> get(std::string_view name) const override {
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  }
};

std::string text(capnp::Text::Reader t) { return std::string(t.cStr(), t.size()); }

void writeFrame(int out, capnp::MessageBuilder& message) { capnp::writeMessageToFd(out, message); }

void sendHead(int out, const EgressResponseHead& head) {
  capnp::MallocMessageBuilder message;
  auto h = message.initRoot<proto::egress::EgressFrame>().initHead();
  h.setStatus(static_cast<uint16_t>(std::clamp(head.status, 0L, 65535L)));
  auto list = h.initHeaders(static_cast<unsigned>(head.headers.size()));
  for (unsigned i = 0; i < head.headers.size(); ++i) {
    list[i].setName(head.headers[i].first);
    list[i].setValue(head.headers[i].second);
  }
  writeFrame(out, message);
}

void sendChunk(int out, std::string_view chunk) {
  while (!chunk.empty()) {
    const std::string_view piece = chunk.substr(0, kMaxChunk);
    capnp::MallocMessageBuilder message;
    message.initRoot<proto::egress::EgressFrame>().setChunk(
        kj::arrayPtr(reinterpret_cast<const kj::byte*>(piece.data()), piece.size()));
    writeFrame(out, message);
    chunk.remove_prefix(piece.size());
  }
}

void sendEnd(int out, const std::optional<std::string>& error) {
  if (error) {
    capnp::MallocMessageBuilder message;
    message.initRoot<proto::egress::EgressFrame>().setError(*error);
    writeFrame(out, message);
  }
  capnp::MallocMessageBuilder message;
  message.initRoot<proto::egress::EgressFrame>().setDone();
  writeFrame(out, message);
}

}  // namespace

int runJob(int in, int out) {
  EgressRequest request;
  EgressPolicy policy;
  JobSecrets secrets;
  std::vector<std::string> known;
  prepare();  // a process started ahead of its request does this while it waits
  try {
    capnp::ReaderOptions options;
    options.traversalLimitInWords = kMaxJobWords;
    options.nestingLimit = 16;
    capnp::StreamFdMessageReader reader(in, options);
    auto job = reader.getRoot<proto::egress::EgressJob>();
    auto r = job.getRequest();
    request.method = text(r.getMethod());
    request.url = text(r.getUrl());
    for (auto h : r.getHeaders()) request.headers.emplace_back(text(h.getName()), text(h.getValue()));
    request.body.assign(reinterpret_cast<const char*>(r.getBody().begin()), r.getBody().size());
    auto p = job.getPolicy();
    policy.allowPrivate = p.getAllowPrivate();
    policy.allowLoopback = p.getAllowLoopback();
    policy.allowPlainHttp = p.getAllowPlainHttp();
    for (auto host : p.getAllowHosts()) policy.allowHosts.push_back(text(host));
    policy.connectTimeoutMs = static_cast<long>(p.getConnectTimeoutMs());
    policy.totalTimeoutMs = static_cast<long>(p.getTotalTimeoutMs());
    policy.idleTimeoutMs = static_cast<long>(p.getIdleTimeoutMs());
    policy.maxResponseBytes = static_cast<std::size_t>(p.getMaxResponseBytes());
    policy.caPem.assign(reinterpret_cast<const char*>(p.getCaBundle().begin()), p.getCaBundle().size());
    for (auto s : job.getSecrets()) {
      secrets.values[text(s.getName())] = text(s.getValue());
      known.push_back(text(s.getValue()));
    }
  } catch (const kj::Exception& e) {
    try {
      sendEnd(out, "the egress job could not be read: " + std::string(e.getDescription().cStr()));
    } catch (const kj::Exception&) {
    }
    return kJobUnreadable;
  }

  // The values this job carries, and the secret-shaped patterns, are redacted from every
  // frame: pined relays the body without looking at it.
  const redact::Redactor redactor(known);
  try {
    auto error = perform(
        request, policy, secrets, redactor, [out](const EgressResponseHead& head) { sendHead(out, head); },
        [out](std::string_view chunk) {
          sendChunk(out, chunk);
          return true;
        });
    sendEnd(out, error);
  } catch (const kj::Exception&) {
    return kJobOrphaned;  // a frame could not be written: pined is gone or cancelled the request
  }
  return kJobDone;
}

}  // namespace pine::egress
