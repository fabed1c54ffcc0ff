#include "broker/model_relay.h"

#include <kj/debug.h>

#include "broker/policy/run_limits.h"
#include "broker/usage.h"
#include "common/fd.h"
#include "common/log.h"
#include "providers/provider.h"
#include "providers/reply_script.h"

namespace pine {
namespace {

// The worker's half of a model stream, teed into a decoder so the broker reads the usage itself.
class RelaySink final : public proto::ByteSink::Server {
 public:
  RelaySink(proto::ModelStream::Client worker, ::pine::model::StreamDecoder& decoder)
      : worker_(kj::mv(worker)), decoder_(decoder) {}

 protected:
  kj::Promise<void> write(WriteContext context) override {
    auto chunk = context.getParams().getChunk();
    try {
      decoder_.feed(std::string_view(reinterpret_cast<const char*>(chunk.begin()), chunk.size()));
    } catch (std::exception&) {
      // The worker decodes for itself; a stream the broker cannot read just counts no usage.
    }
    auto req = worker_.writeRequest();
    req.setChunk(chunk);
    return req.send();
  }

 private:
  proto::ModelStream::Client worker_;
  ::pine::model::StreamDecoder& decoder_;
};

}  // namespace

void ModelRelay::recordUsage(const ::pine::model::Usage& turn) {
  const auto& models = run_.config->models.models;
  auto m = models.find(run_.config->effectiveModel(run_.agent()));
  store::Usage u = priceUsage(turn, m == models.end() ? nullptr : &m->second);
  taskCost_ += u.cost;
  run_.services.recordUsage(run_.taskId, u);
}

kj::Promise<ModelAnswer> ModelRelay::call(ModelCallData call, proto::ModelStream::Client sink) {
  const auto& a = run_.agent();
  run_.journal.workerReturned();  // the worker asks the model again: the calls it ran have returned
  if (!run_.stopReason.empty()) return ModelAnswer{0, {}, run_.stopReason};
  if (++calls_ > 200) {
    run_.stopReason = "the run made more than 200 model calls";
    return ModelAnswer{0, {}, run_.stopReason};
  }
  // Today's stored usage holds this task's so far: it is recorded as it happens. Cache reads
  // and writes are tokens too, and the cost is the full one (cache prices included).
  auto today = run_.services.store().usageSince(a.id, startOfTodayMs());
  policy::BudgetUse use{today.tokens(), today.cost, taskCost_};
  if (auto why = policy::checkBudget(a.budget, use)) {
    run_.stopReason = *why;
    run_.services.notifyOwner(a.id, "budget: " + *why + "; the run was stopped", run_.taskId, "budget");
    audit("budget.stop", {{"agent", a.id}, {"task", run_.taskId}, {"reason", *why}});
    return ModelAnswer{0, {}, *why};
  }
  const auto& config = *run_.config;
  const auto& modelName = config.effectiveModel(a);
  auto m = config.models.models.find(modelName);
  if (m == config.models.models.end()) return ModelAnswer{0, {}, "agent " + a.id + " has no model configured"};
  auto p = config.models.providers.find(m->second.provider);
  if (p == config.models.providers.end()) return ModelAnswer{0, {}, "no provider '" + m->second.provider + "'"};
  const config::Provider& provider = p->second;
  auto wire = ::pine::model::makeProvider(provider.kind);
  auto decoder = std::shared_ptr<::pine::model::StreamDecoder>(wire->decoder().release());

  if (provider.kind == config::ProviderKind::Script) {
    // The script model answers here, in the OpenAI wire format, so the worker's client path is the real one.
    std::string sse;
    try {
      std::string file = run_.services.home().root + "/" + provider.script;
      auto script = ::pine::model::ReplyScript::parse(readFile(file), file);
      sse = script.answer(nlohmann::json::parse(call.body));
    } catch (std::exception& e) {
      return ModelAnswer{500, {}, std::string("the script model could not answer: ") + e.what()};
    }
    try {
      decoder->feed(sse);
      auto turn = decoder->finish();
      recordUsage(turn.usage);
    } catch (std::exception&) {
    }
    auto req = sink.writeRequest();
    req.setChunk(kj::arrayPtr(reinterpret_cast<const kj::byte*>(sse.data()), sse.size()));
    return req.send().then([]() { return ModelAnswer{200, {{"content-type", "text/event-stream"}}, ""}; });
  }

  auto req = run_.services.supervisor().egressRequest();
  auto r = req.initRequest();
  r.setMethod("POST");
  std::string base = provider.baseUrl;
  while (!base.empty() && base.back() == '/') base.pop_back();
  if (call.path.empty() || call.path[0] != '/' || call.path.find("..") != std::string::npos ||
      call.path.find_first_of("?#@") != std::string::npos)
    return ModelAnswer{0, {}, "a model call's path must be a plain absolute path"};
  r.setUrl(base + call.path);
  std::vector<std::pair<std::string, std::string>> headers;
  for (auto& [n, v] : call.headers) {
    std::string lower = n;
    for (auto& c : lower) c = (char)tolower((unsigned char)c);
    // The worker never chooses credentials or where they go.
    if (lower == "authorization" || lower == "x-api-key" || lower == "cookie" || lower == "host" ||
        v.find("${") != std::string::npos)
      continue;
    headers.emplace_back(n, v);
  }
  for (auto& h : ::pine::model::keyHeaders(provider)) headers.push_back(h);
  auto hs = r.initHeaders(headers.size());
  for (size_t i = 0; i < headers.size(); ++i) {
    hs[i].setName(headers[i].first);
    hs[i].setValue(headers[i].second);
  }
  r.setBody(kj::arrayPtr(reinterpret_cast<const kj::byte*>(call.body.data()), call.body.size()));
  req.setSink(kj::heap<RelaySink>(kj::mv(sink), *decoder));
  return req.send().then([this, decoder](auto&& resp) {
    ModelAnswer a{resp.getStatus(), {}, resp.getError().cStr()};
    for (auto h : resp.getHeaders()) a.headers.emplace_back(h.getName().cStr(), h.getValue().cStr());
    if (a.status >= 200 && a.status < 300) {
      try {
        auto turn = decoder->finish();
        recordUsage(turn.usage);
      } catch (std::exception&) {
      }
    }
    return a;
  });
}

}  // namespace pine
