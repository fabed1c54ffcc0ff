#include "broker/mcp/json_rpc.h"

#include "common/json_depth.h"

namespace pine::mcp {

namespace {

bool validId(const nlohmann::json& id) {
  return id.is_string() || id.is_number_integer() || id.is_number_unsigned();
}

Message invalid(std::string why) {
  Message m;
  m.problem = std::move(why);
  return m;
}

}  // namespace

Message parseMessage(std::string_view text) {
  if (jsonNestingDepth(text) > kMaxNesting) return invalid("nested deeper than " + std::to_string(kMaxNesting) + " levels");
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return invalid("not JSON");
  if (j.is_array()) return invalid("a JSON-RPC batch (MCP messages come one at a time)");
  if (!j.is_object()) return invalid("not a JSON object");
  if (j.value("jsonrpc", nlohmann::json()) != "2.0") return invalid("no \"jsonrpc\": \"2.0\"");
  Message m;
  bool hasId = j.contains("id") && !j["id"].is_null();
  if (hasId && !validId(j["id"])) return invalid("an id that is neither a string nor an integer");
  if (j.contains("method")) {
    if (!j["method"].is_string() || j["method"].get<std::string>().empty()) return invalid("a method that is not a name");
    m.method = j["method"].get<std::string>();
    if (j.contains("params")) {
      if (!j["params"].is_object() && !j["params"].is_array()) return invalid("params that are not an object");
      m.params = j["params"];
    }
    m.kind = hasId ? Message::Kind::Request : Message::Kind::Notification;
    if (hasId) m.id = j["id"];
    return m;
  }
  if (!hasId) return invalid("neither a method nor an id");
  m.id = j["id"];
  if (j.contains("error")) {
    const auto& e = j["error"];
    if (!e.is_object() || !e.contains("code") || !e["code"].is_number_integer())
      return invalid("an error without an integer code");
    m.kind = Message::Kind::Error;
    m.errorCode = e["code"].get<long long>();
    m.errorMessage = e.contains("message") && e["message"].is_string() ? e["message"].get<std::string>() : "";
    return m;
  }
  if (!j.contains("result")) return invalid("an answer with neither result nor error");
  m.kind = Message::Kind::Result;
  m.result = j["result"];
  return m;
}

std::string requestText(long long id, const std::string& method, const nlohmann::json& params) {
  nlohmann::json j = {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
  if (!params.is_null()) j["params"] = params;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string notificationText(const std::string& method, const nlohmann::json& params) {
  nlohmann::json j = {{"jsonrpc", "2.0"}, {"method", method}};
  if (!params.is_null()) j["params"] = params;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string resultText(const nlohmann::json& id, const nlohmann::json& result) {
  return nlohmann::json{{"jsonrpc", "2.0"}, {"id", id}, {"result", result}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string errorText(const nlohmann::json& id, long long code, const std::string& message) {
  return nlohmann::json{{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace pine::mcp
