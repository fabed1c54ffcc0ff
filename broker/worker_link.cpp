#include "broker/worker_link.h"

#include <kj/debug.h>

namespace pine {

bool isValidUtf8(std::string_view s) {
  size_t i = 0, n = s.size();
  while (i < n) {
    unsigned char c = (unsigned char)s[i];
    size_t len;
    uint32_t cp;
    if (c < 0x80) { ++i; continue; }
    else if ((c & 0xE0) == 0xC0) { len = 2; cp = c & 0x1F; }
    else if ((c & 0xF0) == 0xE0) { len = 3; cp = c & 0x0F; }
    else if ((c & 0xF8) == 0xF0) { len = 4; cp = c & 0x07; }
    else return false;
    if (i + len > n) return false;
    for (size_t k = 1; k < len; ++k) {
      unsigned char cc = (unsigned char)s[i + k];
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    // No overlong forms, no surrogates, nothing past U+10FFFF.
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += len;
  }
  return true;
}

namespace {

std::string text(capnp::Text::Reader t) { return std::string(t.begin(), t.size()); }

// The Gate a run's worker asks before it runs one of its own tools.
class GateImpl final : public proto::Gate::Server {
 public:
  explicit GateImpl(RunHost& host) : host_(host) {}

 protected:
  kj::Promise<void> check(CheckContext context) override {
    auto p = context.getParams();
    KJ_REQUIRE(p.getArgs().size() <= kMaxToolArgsBytes, "tool arguments exceed 1 MiB");
    KJ_REQUIRE(isValidUtf8(text(p.getTool())) && isValidUtf8(text(p.getArgs())), "tool call is not UTF-8");
    return host_.checkTool(text(p.getTool()), text(p.getArgs())).then([context](GateAnswer a) mutable {
      auto r = context.getResults();
      r.setAllowed(a.allowed);
      r.setReason(a.reason);
      r.setTainted(a.tainted);
      r.setOutside(a.outside);
    });
  }

  kj::Promise<void> ran(RanContext context) override {
    auto p = context.getParams();
    KJ_REQUIRE(p.getTool().size() <= 256 && p.getFirstLine().size() <= 1024, "Gate.ran: tool or line too long");
    KJ_REQUIRE(isValidUtf8(text(p.getTool())) && isValidUtf8(text(p.getFirstLine())), "Gate.ran: not UTF-8");
    host_.toolRan(text(p.getTool()), p.getIsError(), text(p.getFirstLine()));
    return kj::READY_NOW;
  }

 private:
  RunHost& host_;
};

// One broker-side tool, handed to a worker only when its run's profile includes it.
class ToolImpl final : public proto::Tool::Server {
 public:
  ToolImpl(RunHost& host, std::string name) : host_(host), name_(std::move(name)) {}

 protected:
  kj::Promise<void> call(CallContext context) override {
    auto args = text(context.getParams().getArgs());
    KJ_REQUIRE(args.size() <= kMaxToolArgsBytes, "tool arguments exceed 1 MiB");
    KJ_REQUIRE(isValidUtf8(args), "tool arguments are not UTF-8");
    // An MCP call may wait long on a server: a task that ends (cancelled, timed out) takes its
    // calls with it, down to the server (notifications/cancelled). The built-in tools finish what
    // they started, so that the journal says what came of it.
    if (name_.rfind("mcp__", 0) == 0) context.allowCancellation();
    return host_.callTool(name_, args).then([context](ToolAnswer a) mutable {
      auto r = context.getResults();
      r.setResult(a.result);
      r.setIsError(a.isError);
    });
  }

 private:
  RunHost& host_;
  std::string name_;
};

// The download tool's fetch, handed to a worker only when its run has the tool.
class DownloadImpl final : public proto::Download::Server {
 public:
  explicit DownloadImpl(RunHost& host) : host_(host) {}

 protected:
  kj::Promise<void> fetch(FetchContext context) override {
    auto p = context.getParams();
    KJ_REQUIRE(p.getUrl().size() <= 8192 && p.getPath().size() <= 4096, "download: url or path too long");
    KJ_REQUIRE(isValidUtf8(text(p.getUrl())) && isValidUtf8(text(p.getPath())), "download: not UTF-8");
    return host_.download(text(p.getUrl()), text(p.getPath()), p.getSink()).then([context](DownloadAnswer a) mutable {
      auto r = context.getResults();
      r.setAllowed(a.allowed);
      r.setReason(a.reason);
      r.setStatus((uint16_t)a.status);
      r.setLocation(a.location);
      r.setError(a.error);
    });
  }

 private:
  RunHost& host_;
};

void setSpec(proto::ToolSpec::Builder out, const ToolSpecText& spec) {
  out.setName(spec.name);
  out.setDescription(spec.description);
  out.setParameters(spec.parameters);
}

}  // namespace

void WorkerBroker::settle(WorkerOutcome outcome) {
  KJ_REQUIRE(outcome_->isWaiting(), "this task has already ended");
  outcome_->fulfill(kj::mv(outcome));
}

kj::Promise<void> WorkerBroker::getTask(GetTaskContext context) {
  auto results = context.getResults();
  auto t = results.initTask();
  t.setId(task_.id);
  t.setAgent(task_.agent);
  t.setText(task_.text);
  t.setSandbox(task_.sandbox);
  t.setSession(task_.session);
  t.setTrust(task_.trust);
  t.setTainted(task_.tainted);
  t.setHistory(task_.history);
  t.setInstructions(task_.instructions);
  auto wt = t.initWorkerTools(task_.workerTools.size());
  for (size_t i = 0; i < task_.workerTools.size(); ++i) setSpec(wt[i], task_.workerTools[i]);
  t.setMode(task_.mode);
  t.setProvider(task_.provider);
  t.setModelId(task_.modelId);
  t.setMaxTokens(task_.maxTokens);
  t.setMaxSteps(task_.maxSteps);
  t.setTimeoutSec(task_.timeoutSec);
  t.setShellTimeoutSec(task_.shellTimeoutSec);
  t.setFolder(task_.folder);
  auto rr = t.initReadRoots(task_.readRoots.size());
  for (size_t i = 0; i < task_.readRoots.size(); ++i) rr.set(i, task_.readRoots[i]);
  auto wr = t.initWriteRoots(task_.writeRoots.size());
  for (size_t i = 0; i < task_.writeRoots.size(); ++i) wr.set(i, task_.writeRoots[i]);
  auto at = t.initAttachments(task_.attachments.size());
  for (size_t i = 0; i < task_.attachments.size(); ++i) at.set(i, task_.attachments[i]);
  if (host_) {
    results.setGate(kj::heap<GateImpl>(*host_));
    auto infos = host_->brokerTools();
    auto list = results.initTools(infos.size());
    for (size_t i = 0; i < infos.size(); ++i) {
      setSpec(list[i].initSpec(), infos[i]);
      list[i].setTool(kj::heap<ToolImpl>(*host_, infos[i].name));
    }
    if (host_->mayDownload()) results.setDownload(kj::heap<DownloadImpl>(*host_));
  }
  return kj::READY_NOW;
}

kj::Promise<void> WorkerBroker::finish(FinishContext context) {
  auto p = context.getParams();
  auto answer = p.getAnswer();
  std::string_view s(answer.begin(), answer.size());
  std::string transcript = p.hasTranscript() ? text(p.getTranscript()) : "[]";
  std::string why;
  if (s.size() > kMaxAnswerBytes) why = "the worker's answer exceeds 1 MiB";
  else if (!isValidUtf8(s)) why = "the worker's answer is not UTF-8";
  else if (transcript.size() > kMaxTranscriptBytes) why = "the worker's transcript exceeds 8 MiB";
  else if (!isValidUtf8(transcript)) why = "the worker's transcript is not UTF-8";
  if (!why.empty()) {
    if (outcome_->isWaiting()) outcome_->fulfill(WorkerOutcome{false, why});
    KJ_FAIL_REQUIRE("answer refused", why);
  }
  WorkerOutcome o{true, std::string(s), transcript.empty() ? "[]" : transcript};
  if (p.hasUsage()) {
    o.tokensIn = (long long)std::min<uint64_t>(p.getUsage().getInput(), 1ull << 50);
    o.tokensOut = (long long)std::min<uint64_t>(p.getUsage().getOutput(), 1ull << 50);
  }
  settle(kj::mv(o));
  return kj::READY_NOW;
}

kj::Promise<void> WorkerBroker::fail(FailContext context) {
  auto reason = context.getParams().getReason();
  std::string_view s(reason.begin(), reason.size());
  std::string t(s.substr(0, kMaxFailReasonBytes));
  if (!isValidUtf8(t)) t = "(the worker's reason was not UTF-8)";
  settle(WorkerOutcome{false, "worker reported: " + t});
  return kj::READY_NOW;
}

kj::Promise<void> WorkerBroker::ping(PingContext) { return kj::READY_NOW; }

kj::Promise<void> WorkerBroker::attachment(AttachmentContext context) {
  KJ_REQUIRE(host_ != nullptr && outcome_->isWaiting(), "this task has no files to give");
  unsigned index = context.getParams().getIndex();
  KJ_REQUIRE(index < task_.attachments.size(), "no such file of this task");
  return host_->attachment(index, context.getParams().getSink());
}

kj::Promise<void> WorkerBroker::model(ModelContext context) {
  KJ_REQUIRE(host_ != nullptr, "this worker has no model access");
  context.allowCancellation();  // a worker that is gone cancels its request, down to pined's egress child
  KJ_REQUIRE(outcome_->isWaiting(), "this task has already ended");
  auto p = context.getParams();
  auto call = p.getCall();
  ModelCallData data;
  data.path = text(call.getPath());
  KJ_REQUIRE(call.getHeaders().size() <= 32, "at most 32 headers");
  for (auto h : call.getHeaders()) data.headers.emplace_back(text(h.getName()), text(h.getValue()));
  KJ_REQUIRE(call.getBody().size() <= (16u << 20), "a model request is at most 16 MiB");
  data.body.assign(reinterpret_cast<const char*>(call.getBody().begin()), call.getBody().size());
  return host_->model(kj::mv(data), p.getSink()).then([context](ModelAnswer a) mutable {
    auto r = context.getResults();
    r.setStatus(a.status);
    r.setError(a.error);
    auto hs = r.initHeaders(a.headers.size());
    for (size_t i = 0; i < a.headers.size(); ++i) {
      hs[i].setName(a.headers[i].first);
      hs[i].setValue(a.headers[i].second);
    }
  });
}

}  // namespace pine
