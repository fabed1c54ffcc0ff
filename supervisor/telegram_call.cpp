#include "supervisor/telegram_call.h"

#include "redact/redactor.h"

#include <kj/debug.h>

#include <algorithm>

#include "common/url_origin.h"
#include "config/model.h"
#include "supervisor/egress_call.h"
#include "supervisor/supervisor.h"

namespace pine {
namespace {

// The methods the broker's Telegram channel uses; nothing that changes the bot itself
// (setWebhook, deleteMessage, leaveChat, ...) can be asked for.
constexpr const char* kMethods[] = {"getMe",        "getUpdates",          "sendMessage",    "editMessageText",
                                    "answerCallbackQuery", "sendChatAction", "getFile"};
constexpr size_t kMaxParams = 1 << 20;

const config::Source& telegramSource(Supervisor& sup, const std::string& name) {
  auto cfg = sup.config();
  KJ_REQUIRE(cfg != nullptr, "telegram: no configuration is loaded");
  for (const auto& s : cfg->pine.sources)
    if (s.name == name && s.type == "telegram") return s;
  KJ_FAIL_REQUIRE("telegram: no telegram source of that name", name);
}

std::string baseOf(const config::Source& s) {
  std::string base = s.baseUrl.empty() ? config::kTelegramApi : s.baseUrl;
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base;
}

// Only the configured host; loopback, private addresses and plain http only when the owner
// named another server (`pinectl check` lists it).
egress::EgressPolicy policyFor(const config::Source& s) {
  egress::EgressPolicy p;
  std::string origin = urlOrigin(baseOf(s)).value_or("");
  KJ_REQUIRE(!origin.empty(), "telegram: the source's baseUrl is not a plain http(s)://host[:port] address", s.name);
  std::string host = origin.substr(origin.find("://") + 3);
  host = host.substr(0, host.rfind(':'));
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  p.allowHosts = {host};
  if (!s.baseUrl.empty() && baseOf(s) != config::kTelegramApi) p.allowLoopback = p.allowPrivate = p.allowPlainHttp = true;
  return p;
}

}  // namespace

std::optional<std::string> telegramFilePathProblem(const std::string& path) {
  if (path.empty() || path.size() > 256) return "the file path is empty or over 256 bytes";
  if (path.front() == '/' || path.find("..") != std::string::npos) return "the file path leaves the bot's files";
  for (unsigned char c : path)
    if (!(std::isalnum(c) || c == '_' || c == '.' || c == '/' || c == '-'))
      return "the file path holds a character other than [A-Za-z0-9_./-]";
  return std::nullopt;
}

kj::Promise<void> telegramCall(
    Supervisor& sup, EgressProcesses& egress,
    capnp::CallContext<proto::Supervisor::TelegramParams, proto::Supervisor::TelegramResults> context) {
  auto p = context.getParams();
  const std::string method = p.getMethod();
  KJ_REQUIRE(std::find_if(std::begin(kMethods), std::end(kMethods), [&](const char* m) { return method == m; }) !=
                 std::end(kMethods),
             "telegram: a method the channel does not use", method);
  KJ_REQUIRE(p.getParams().size() <= kMaxParams, "telegram: parameters over 1 MiB");
  const config::Source& s = telegramSource(sup, p.getSource());
  egress::EgressRequest req;
  req.method = "POST";
  req.url = baseOf(s) + "/bot${secret:" + s.tokenSecret + "}/" + method;
  req.headers = {{"Content-Type", "application/json"}};
  // Whatever the broker sends to Telegram (answers, notices, approval cards) leaves without a
  // value of .env or a secret-shaped string in it: redacted here, where the values are known.
  req.body = sup.redactor().redact(
      std::string_view(reinterpret_cast<const char*>(p.getParams().begin()), p.getParams().size()),
      redact::Format::kJson);
  egress::EgressPolicy policy = policyFor(s);
  // getUpdates is a long poll: the broker asks for at most 50 seconds.
  policy.totalTimeoutMs = 75 * 1000;
  policy.maxResponseBytes = 16 << 20;
  return egress.run(req, kj::mv(policy), p.getSink(), "telegram:" + s.name)
      .then([context](EgressAnswer a) mutable { setAnswer(context.getResults(), a); });
}

kj::Promise<void> telegramFile(
    Supervisor& sup, EgressProcesses& egress,
    capnp::CallContext<proto::Supervisor::TelegramFileParams, proto::Supervisor::TelegramFileResults> context) {
  auto p = context.getParams();
  const std::string path = p.getFilePath();
  if (auto why = telegramFilePathProblem(path)) KJ_FAIL_REQUIRE("telegramFile: bad path", *why);
  const config::Source& s = telegramSource(sup, p.getSource());
  egress::EgressRequest req;
  req.method = "GET";
  req.url = baseOf(s) + "/file/bot${secret:" + s.tokenSecret + "}/" + path;
  egress::EgressPolicy policy = policyFor(s);
  policy.totalTimeoutMs = 10 * 60 * 1000;
  policy.idleTimeoutMs = 60 * 1000;
  policy.maxResponseBytes = (size_t)s.maxFileMb << 20;
  return egress.run(req, kj::mv(policy), p.getSink(), "telegram-file:" + s.name)
      .then([context](EgressAnswer a) mutable { setAnswer(context.getResults(), a); });
}

}  // namespace pine
