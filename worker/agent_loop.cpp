#include "worker/agent_loop.h"

#include <kj/debug.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "worker/prompt.h"
#include "providers/provider.h"
#include "worker/tools/tool_box.h"
#include "worker/tools/tool_parts.h"
#include "common/outside_text.h"

namespace pine {
namespace {

using model::Message;

std::string str(capnp::Text::Reader t) { return std::string(t.begin(), t.size()); }

// One model answer as it streams in: decoded as it comes, and kept whole for an error report.
class StreamSink final : public proto::ModelStream::Server {
 public:
  explicit StreamSink(model::StreamDecoder& decoder) : decoder_(decoder) {}
  std::string body;
  std::string decodeError;

 protected:
  kj::Promise<void> write(WriteContext context) override {
    auto chunk = context.getParams().getChunk();
    std::string_view piece(reinterpret_cast<const char*>(chunk.begin()), chunk.size());
    if (body.size() < (1u << 20)) body.append(piece.substr(0, (1u << 20) - body.size()));
    if (decodeError.empty()) {
      try {
        decoder_.feed(piece);
      } catch (std::exception& e) {
        decodeError = e.what();
      }
    }
    return kj::READY_NOW;
  }

 private:
  model::StreamDecoder& decoder_;
};

// A downloaded file's bytes as they arrive, handed to the download tool's writer.
class FileSinkImpl final : public proto::FileSink::Server {
 public:
  explicit FileSinkImpl(const std::function<bool(std::string_view)>& onChunk) : onChunk_(onChunk) {}

 protected:
  kj::Promise<void> write(WriteContext context) override {
    auto chunk = context.getParams().getChunk();
    KJ_REQUIRE(onChunk_(std::string_view(reinterpret_cast<const char*>(chunk.begin()), chunk.size())),
               "the download could not be written");
    return kj::READY_NOW;
  }

 private:
  const std::function<bool(std::string_view)>& onChunk_;
};

// The download tool's fetcher over the Download capability; waits on the event loop, so the
// chunks arrive while the call is outstanding.
tools::Fetcher fetcherFor(proto::Download::Client download, kj::WaitScope& ws) {
  auto cap = std::make_shared<proto::Download::Client>(kj::mv(download));
  return [cap, &ws](const std::string& url, const std::string& path,
                    const std::function<bool(std::string_view)>& onChunk) {
    tools::FetchResult out;
    auto req = cap->fetchRequest();
    req.setUrl(url);
    req.setPath(path);
    req.setSink(kj::heap<FileSinkImpl>(onChunk));
    try {
      auto r = req.send().wait(ws);
      out.allowed = r.getAllowed();
      out.message = r.getAllowed() ? str(r.getError()) : str(r.getReason());
      out.status = r.getStatus();
      out.location = str(r.getLocation());
    } catch (kj::Exception& e) {
      out.allowed = true;
      out.message = e.getDescription().cStr();
    }
    return out;
  };
}

nlohmann::json messageJson(const Message& m) {
  nlohmann::json j;
  switch (m.role) {
    case Message::Role::User: j["role"] = "user"; break;
    case Message::Role::Assistant: j["role"] = "assistant"; break;
    case Message::Role::Tool: j["role"] = "tool"; break;
  }
  j["text"] = m.text;
  if (!m.toolCalls.empty()) {
    j["toolCalls"] = nlohmann::json::array();
    for (auto& c : m.toolCalls) j["toolCalls"].push_back({{"id", c.id}, {"name", c.name}, {"arguments", c.arguments}});
  }
  if (m.role == Message::Role::Tool) {
    j["toolCallId"] = m.toolCallId;
    j["toolName"] = m.toolName;
    j["isError"] = m.isError;
  }
  return j;
}

std::optional<Message> messageFrom(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("role") || !j["role"].is_string()) return std::nullopt;
  std::string role = j["role"].get<std::string>();
  Message m;
  if (role == "user") m.role = Message::Role::User;
  else if (role == "assistant") m.role = Message::Role::Assistant;
  else if (role == "tool") m.role = Message::Role::Tool;
  else return std::nullopt;
  m.text = j.value("text", "");
  if (j.contains("toolCalls") && j["toolCalls"].is_array())
    for (auto& c : j["toolCalls"])
      if (c.is_object())
        m.toolCalls.push_back({c.value("id", ""), c.value("name", ""), c.value("arguments", "{}")});
  m.toolCallId = j.value("toolCallId", "");
  m.toolName = j.value("toolName", "");
  m.isError = j.value("isError", false);
  return m;
}

config::ProviderKind kindOf(const std::string& s) {
  if (s == "anthropic") return config::ProviderKind::Anthropic;
  if (s == "openai") return config::ProviderKind::OpenAI;
  return config::ProviderKind::Script;
}

int failTask(proto::Broker::Client& broker, kj::WaitScope& ws, const std::string& why) {
  auto req = broker.failRequest();
  req.setReason(why.substr(0, 4000));
  try {
    req.send().wait(ws);
  } catch (kj::Exception& e) {
    std::cerr << "pine-worker: " << e.getDescription().cStr() << "\n";
  }
  return 1;
}

// Tells the broker what came of a call it allowed: the owner sees a failure in the progress lines
// and `pinectl task`. The first line only; the whole result goes to the model and the transcript.
void reportRan(proto::Gate::Client& gate, kj::WaitScope& ws, const std::string& tool, const tools::ToolResult& r) {
  std::string_view first(r.text);
  first = first.substr(0, std::min<size_t>(first.find('\n'), 512));
  std::string line = tools::detail::cutUtf8(stripTerminalControls(first), 200);  // the broker takes UTF-8 only
  auto req = gate.ranRequest();
  req.setTool(tool);
  req.setIsError(r.isError);
  req.setFirstLine(line);
  req.send().wait(ws);
}

}  // namespace

int runAgentTask(proto::Broker::Client broker, kj::WaitScope& ws) {
  auto got = broker.getTaskRequest().send().wait(ws);
  auto task = got.getTask();
  proto::Gate::Client gate = got.getGate();
  std::map<std::string, proto::Tool::Client> brokerTools;
  std::vector<model::ToolSpec> specs;
  std::set<std::string> workerTools;
  // What the model is told of each tool, and the schemas the worker's own tools check their
  // arguments against, come from the broker's tool table (getTask), never from the worker.
  std::map<std::string, nlohmann::json> schemas;
  auto parsedSchema = [](const capnp::Text::Reader& text) {
    auto params = nlohmann::json::parse(str(text), nullptr, false);
    return params.is_object() ? params : nlohmann::json{{"type", "object"}, {"properties", nlohmann::json::object()}};
  };
  for (auto spec : task.getWorkerTools()) {
    std::string name = str(spec.getName());
    if (name == "download" && !got.hasDownload()) continue;  // the tool is only as real as its capability
    workerTools.insert(name);
    schemas[name] = parsedSchema(spec.getParameters());
    specs.push_back({name, str(spec.getDescription()), schemas[name]});
  }
  for (auto t : got.getTools()) {
    auto spec = t.getSpec();
    brokerTools.emplace(str(spec.getName()), t.getTool());
    specs.push_back({str(spec.getName()), str(spec.getDescription()), parsedSchema(spec.getParameters())});
  }

  char cwd[4096];
  std::string workspace = getcwd(cwd, sizeof cwd) ? cwd : ".";
  tools::ToolEnv env;
  env.workspace = workspace;
  // A folder the owner opened for this conversation (the broker names it only when it asked pined
  // to open it in this sandbox): the tools start there (shell cwd, relative paths), the workspace
  // stays reachable. One this worker cannot reach is left out rather than failing the task.
  std::string folder = str(task.getFolder());
  if (!folder.empty() && access(folder.c_str(), R_OK | W_OK | X_OK) == 0) {
    env.workspace = folder;
    env.extraWrite.push_back(workspace);
  } else {
    folder.clear();
  }
  env.tainted = task.getTainted();
  env.shellTimeoutSec = (int)task.getShellTimeoutSec();
  env.schemas = schemas;
  if (const char* h = getenv("HOME")) env.home = h;
  if (const char* t = getenv("TMPDIR")) env.tmpdir = t;
  if (got.hasDownload()) env.fetch = fetcherFor(got.getDownload(), ws);
  // Granted folders become roots of the file tools' jail; one that does not exist (or that the
  // sandbox hides) is left out rather than failing the task.
  auto expand = [&](std::string p) {
    for (auto [var, value] : {std::pair<std::string, std::string>{"${WORKSPACE}", workspace},
                              {"${HOME}", env.home}, {"${TMPDIR}", env.tmpdir}})
      for (size_t at; (at = p.find(var)) != std::string::npos;) p.replace(at, var.size(), value);
    return p;
  };
  for (auto r : task.getReadRoots()) {
    std::string p = expand(str(r));
    if (access(p.c_str(), R_OK) == 0) env.extraRead.push_back(p);
  }
  for (auto w : task.getWriteRoots()) {
    std::string p = expand(str(w));
    if (access(p.c_str(), W_OK) == 0) env.extraWrite.push_back(p);
  }
  tools::ToolBox toolbox(env);
  // Files the owner sent with the task are saved first, where the task's text says they are.
  auto attachments = task.getAttachments();
  std::string unsaved;
  for (unsigned i = 0; i < attachments.size(); ++i) {
    const std::string path = str(attachments[i]);
    auto err = toolbox.saveAttachment(path, [&](const std::function<bool(std::string_view)>& onChunk) {
      auto req = broker.attachmentRequest();
      req.setIndex(i);
      req.setSink(kj::heap<FileSinkImpl>(onChunk));
      try {
        req.send().wait(ws);
        return true;
      } catch (kj::Exception&) {
        return false;
      }
    });
    if (err) unsaved += "\n(" + path + " was not saved: " + *err + ")";
  }

  PromptFacts facts;
  facts.agent = str(task.getAgent());
  facts.instructions = str(task.getInstructions());
  facts.workspace = workspace;
  facts.folder = folder;
  facts.mode = str(task.getMode());
  facts.trust = str(task.getTrust());
  facts.tainted = task.getTainted();
  std::string system = buildSystemPrompt(facts);

  std::vector<Message> messages;
  auto history = nlohmann::json::parse(str(task.getHistory()), nullptr, false);
  if (history.is_array())
    for (auto& h : history)
      if (auto m = messageFrom(h)) messages.push_back(*m);
  Message user;
  user.role = Message::Role::User;
  user.text = str(task.getText()) + unsaved;
  messages.push_back(user);
  size_t firstNew = messages.size();

  auto provider = model::makeProvider(kindOf(str(task.getProvider())));
  model::Usage total;
  unsigned maxSteps = task.getMaxSteps() ? task.getMaxSteps() : 24;
  for (unsigned step = 0; step < maxSteps; ++step) {
    model::ModelRequest mreq;
    mreq.model = str(task.getModelId());
    mreq.system = system;
    mreq.messages = messages;
    mreq.tools = specs;
    mreq.maxTokens = (int)(task.getMaxTokens() ? task.getMaxTokens() : 4096);
    auto call = provider->buildCall(mreq);
    auto decoder = provider->decoder();
    auto sinkOwn = kj::heap<StreamSink>(*decoder);
    StreamSink& sink = *sinkOwn;
    auto req = broker.modelRequest();
    auto c = req.initCall();
    c.setPath(call.path);
    auto hs = c.initHeaders(call.headers.size());
    for (size_t i = 0; i < call.headers.size(); ++i) {
      hs[i].setName(call.headers[i].first);
      hs[i].setValue(call.headers[i].second);
    }
    c.setBody(kj::arrayPtr(reinterpret_cast<const kj::byte*>(call.body.data()), call.body.size()));
    req.setSink(kj::mv(sinkOwn));
    auto resp = req.send().wait(ws);
    unsigned status = resp.getStatus();
    if (status == 0) return failTask(broker, ws, "the model call was refused: " + str(resp.getError()));
    if (status < 200 || status >= 300) {
      std::vector<std::pair<std::string, std::string>> headers;
      for (auto h : resp.getHeaders()) headers.emplace_back(str(h.getName()), str(h.getValue()));
      auto err = provider->errorFor((int)status, headers, sink.body);
      std::string extra = resp.getError().size() ? " (" + str(resp.getError()) + ")" : "";
      return failTask(broker, ws, std::string(err.what()) + extra);
    }
    if (resp.getError().size()) return failTask(broker, ws, "the model call failed: " + str(resp.getError()));
    model::Turn turn;
    try {
      if (!sink.decodeError.empty()) throw std::runtime_error(sink.decodeError);
      turn = decoder->finish();
    } catch (std::exception& e) {
      return failTask(broker, ws, std::string("the model's answer could not be read: ") + e.what());
    }
    total.input += turn.usage.input;
    total.output += turn.usage.output;
    Message assistant;
    assistant.role = Message::Role::Assistant;
    assistant.text = turn.text;
    assistant.toolCalls = turn.toolCalls;
    messages.push_back(assistant);
    if (turn.toolCalls.empty()) {
      nlohmann::json transcript = nlohmann::json::array();
      for (size_t i = firstNew; i < messages.size(); ++i) transcript.push_back(messageJson(messages[i]));
      auto fin = broker.finishRequest();
      fin.setAnswer(turn.text);
      fin.setTranscript(transcript.dump());
      fin.initUsage().setInput(total.input);
      fin.getUsage().setOutput(total.output);
      fin.send().wait(ws);
      return 0;
    }
    for (auto& tc : turn.toolCalls) {
      Message result;
      result.role = Message::Role::Tool;
      result.toolCallId = tc.id;
      result.toolName = tc.name;
      auto args = nlohmann::json::parse(tc.arguments.empty() ? "{}" : tc.arguments, nullptr, false);
      if (args.is_discarded() || !args.is_object()) {
        result.text = "the arguments were not a JSON object: call " + tc.name + " again with valid JSON";
        result.isError = true;
      } else if (tc.name == "download" && workerTools.count(tc.name)) {
        // Decided by the broker when fetched (its capability), not by the Gate: one decision, one question.
        auto r = toolbox.run(tc.name, args);
        result.text = r.text;
        result.isError = r.isError;
        reportRan(gate, ws, tc.name, r);
      } else if (workerTools.count(tc.name)) {
        auto check = gate.checkRequest();
        check.setTool(tc.name);
        check.setArgs(args.dump());
        auto verdict = check.send().wait(ws);
        if (verdict.getTainted() && !env.tainted) {
          // The conversation read outside content meanwhile: from now on the file tools protect instruction files.
          env.tainted = true;
          toolbox = tools::ToolBox(env);
        }
        if (verdict.getAllowed()) {
          auto r = toolbox.run(tc.name, args);
          reportRan(gate, ws, tc.name, r);
          // A result the owner's configuration calls outside content reaches the model as data.
          result.text = verdict.getOutside() && !r.isError ? fenceOutside(tc.name + " result", r.text) : r.text;
          result.isError = r.isError;
        } else {
          result.text = str(verdict.getReason());
          result.isError = true;
        }
      } else if (auto it = brokerTools.find(tc.name); it != brokerTools.end()) {
        auto call2 = it->second.callRequest();
        call2.setArgs(args.dump());
        auto r = call2.send().wait(ws);
        result.text = str(r.getResult());
        result.isError = r.getIsError();
      } else {
        // Not a tool of this run: the broker still hears of the attempt, so the audit log shows it.
        std::string why;
        try {
          auto check = gate.checkRequest();
          check.setTool(tc.name);
          std::string a = args.dump();
          check.setArgs(a.size() <= (64u << 10) ? a : "{}");
          why = str(check.send().wait(ws).getReason());
        } catch (kj::Exception& e) {
          why = e.getDescription().cStr();
        }
        result.text = "there is no tool '" + tc.name + "' in this run (" + why + ")";
        result.isError = true;
      }
      messages.push_back(result);
    }
  }
  return failTask(broker, ws, "the run reached its step limit (" + std::to_string(maxSteps) + " model calls) without an answer");
}

}  // namespace pine
