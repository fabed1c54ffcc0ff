#include "broker/source_polls.h"

#include <kj/debug.h>

#include "broker/collect_sink.h"
#include "broker/event_routing.h"
#include "common/log.h"

namespace pine {
namespace {

constexpr size_t kMaxPage = (8 << 20) + (64 << 10);  // pined caps a page at 8 MiB; redaction may add a little

}  // namespace

sources::HttpServices httpSourceServices(std::function<proto::Supervisor::Client()> supervisor, store::Store& store,
                                         EventBus& bus) {
  sources::HttpServices s;
  s.fetch = [supervisor](const std::string& source, const std::string& url, const std::string& etag,
                         const std::string& lastModified) {
    auto req = supervisor().pollSourceRequest();
    req.setSource(source);
    req.setUrl(url);
    req.setEtag(etag);
    req.setLastModified(lastModified);
    auto body = std::make_shared<std::string>();
    req.setSink(kj::heap<CollectSink>(body, kMaxPage, "a page over 8 MiB"));
    return req.send().then(
        [body](auto r) {
          sources::PageAnswer a;
          a.status = r.getStatus();
          for (auto h : r.getHeaders()) a.headers.emplace_back(h.getName(), h.getValue());
          a.error = r.getError();
          a.body = std::move(*body);
          return a;
        },
        [](kj::Exception&& e) {
          sources::PageAnswer a;
          a.error = describeRemote(e);
          return a;
        });
  };
  s.publish = [&bus](sources::Draft d) { return bus.publish(sourceEvent(std::move(d))).ignoreResult(); };
  s.recall = [&store](const std::string& source) { return store.sourceStates(source); };
  s.remember = [&store](const std::string& source, const std::map<std::string, std::string>& rows) {
    for (const auto& [k, v] : rows) store.putSourceState(source, k, v, nowMs());
  };
  s.looked = [&store](const std::string& source, const std::string& found, long long events) {
    store.noteSourceLook(source, nowMs(), found);
    (void)events;  // counted once, by the router, as each event is published (countEvent)
  };
  s.failed = [&store](const std::string& source, const std::string& error) {
    store.noteSourceError(source, nowMs(), error);
  };
  return s;
}

}  // namespace pine
