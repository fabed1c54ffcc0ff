// The download tool's broker half: the call is decided by the run's gate like any other (policy/approval_rules.cpp's download
// rule: an MCP server's origin, web tools, or the conversation's network), then pined fetches the address
// and the bytes pass through here to the worker, which writes them through its sandbox. Files sent
// with a task (attachment) reach the worker the same way, from the store.
#include <kj/debug.h>
#include <strings.h>

#include "common/url_origin.h"
#include "broker/run.h"
#include "common/log.h"
#include "common/refusal.h"

namespace pine {
namespace {

constexpr size_t kAttachmentChunk = 256 << 10;

// pined's stream, passed on to the worker and counted on the way.
class DownloadRelay final : public proto::ByteSink::Server {
 public:
  DownloadRelay(proto::FileSink::Client worker, std::shared_ptr<uint64_t> bytes)
      : worker_(kj::mv(worker)), bytes_(kj::mv(bytes)) {}

 protected:
  kj::Promise<void> write(WriteContext context) override {
    auto chunk = context.getParams().getChunk();
    *bytes_ += chunk.size();
    auto req = worker_.writeRequest();
    req.setChunk(chunk);
    return req.send();
  }

 private:
  proto::FileSink::Client worker_;
  std::shared_ptr<uint64_t> bytes_;
};

}  // namespace

kj::Promise<DownloadAnswer> Run::download(std::string url, std::string path, proto::FileSink::Client sink) {
  return gate_.checkDownload(url, path)
      .then([this, url, sink = kj::mv(sink)](GateAnswer g) mutable -> kj::Promise<DownloadAnswer> {
        if (!g.allowed) return downloadRefused(g.reason);
        auto bytes = std::make_shared<uint64_t>(0);
        auto req = ctx_.services.supervisor().downloadRequest();
        req.setAgent(ctx_.req.agent);
        req.setUrl(url);
        req.setSink(kj::heap<DownloadRelay>(kj::mv(sink), bytes));
        return req.send().then([this, url, bytes](auto&& resp) {
          DownloadAnswer a;
          a.allowed = true;
          a.status = resp.getStatus();
          a.error = resp.getError().cStr();
          for (auto h : resp.getHeaders())
            if (strcasecmp(h.getName().cStr(), "location") == 0) a.location = h.getValue().cStr();
          nlohmann::json f = {{"agent", ctx_.req.agent}, {"task", ctx_.taskId},
                              {"origin", urlOrigin(url).value_or("")}, {"status", a.status}, {"bytes", *bytes}};
          if (!a.error.empty()) f["error"] = a.error;
          audit("download", f);
          return a;
        });
      });
}

kj::Promise<void> Run::attachment(unsigned index, proto::FileSink::Client sink) {
  auto data = ctx_.services.store().taskFileData(ctx_.taskId, (int)index);
  KJ_REQUIRE(data.has_value(), "the file is no longer kept");
  auto bytes = std::make_shared<std::string>(std::move(*data));
  auto target = std::make_shared<proto::FileSink::Client>(kj::mv(sink));
  // One chunk after another, each at most 256 KiB: the worker writes as they come.
  kj::Promise<void> chain = kj::READY_NOW;
  for (size_t at = 0; at < bytes->size(); at += kAttachmentChunk) {
    chain = chain.then([bytes, target, at]() {
      auto req = target->writeRequest();
      size_t n = std::min(kAttachmentChunk, bytes->size() - at);
      req.setChunk(kj::arrayPtr(reinterpret_cast<const kj::byte*>(bytes->data() + at), n));
      return req.send();
    });
  }
  return chain;
}

}  // namespace pine
