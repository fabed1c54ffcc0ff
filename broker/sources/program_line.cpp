#include "broker/sources/program_line.h"

#include <nlohmann/json.hpp>

#include "broker/sources/payload.h"
#include "broker/sources/program_source.h"
#include "common/outside_json.h"

namespace pine::sources {
namespace {

ProgramLine skipped(std::string why) {
  ProgramLine l;
  l.kind = ProgramLine::Skipped;
  l.why = std::move(why);
  return l;
}

std::string compact(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

}  // namespace

ProgramLine readProgramLine(std::string_view text, const std::string& defaultTopic) {
  if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
  if (text.find_first_not_of(" \t") == std::string_view::npos) return {};
  if (!jsonNestingWithin(text, kMaxJsonDepth))
    return skipped("a line nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  auto j = parseOutsideJson(text);
  if (j.is_discarded() || !j.is_object()) return skipped("a line that is not a JSON object");
  if (j.contains("status")) {
    const auto& st = j["status"];
    if (!st.is_object()) return skipped("\"status\" that is not an object");
    ProgramLine l;
    l.kind = ProgramLine::Status;
    if (st.contains("found")) l.found = st["found"].is_string() ? st["found"].get<std::string>() : compact(st["found"]);
    return l;
  }
  if (!j.contains("payload")) return skipped("a line with neither \"payload\" nor \"status\"");
  ProgramLine l;
  l.kind = ProgramLine::Event;
  l.topic = defaultTopic;
  if (j.contains("topic")) {
    if (!j["topic"].is_string()) return skipped("a \"topic\" that is not a string");
    l.topic = j["topic"].get<std::string>();
  }
  // The source's name as the topic too (the configuration refuses a reserved one; checked again).
  if (auto why = checkProgramTopic(l.topic)) return skipped("a bad topic: " + *why);
  l.payload = compact(j["payload"]);
  return l;
}

}  // namespace pine::sources
