#include "broker/store/json_text.h"

#include <nlohmann/json.hpp>

#include "broker/store/rows.h"

namespace pine::store::detail {

using Json = nlohmann::ordered_json;  // ordered: a rewrite keeps the keys where they were

bool isJson(const std::string& text) { return Json::accept(text); }

void requireJson(const std::string& text, const std::string& what) {
  if (!isJson(text))
    throw StoreError(what + " is not valid JSON text; pass JSON (for example \"{}\", \"null\" or a quoted string)");
}

namespace {

bool walk(Json& j, const TextFn& fn) {
  bool changed = false;
  if (j.is_string()) {
    std::string s = j.get<std::string>();
    std::string r = fn(s);
    if (r != s) j = r, changed = true;
  } else if (j.is_array()) {
    for (auto& v : j) changed |= walk(v, fn);
  } else if (j.is_object()) {
    Json out = Json::object();
    for (auto& [k, v] : j.items()) {
      std::string key = fn(k);
      changed |= key != k;
      Json value = v;
      changed |= walk(value, fn);
      out[key] = std::move(value);
    }
    if (changed) j = std::move(out);
  }
  return changed;
}

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

}  // namespace

std::string rewriteJson(const std::string& text, const TextFn& fn) {
  std::string out = fn(text);
  Json j = Json::parse(out, nullptr, false);
  if (j.is_discarded()) return dump(Json(out));
  // Only re-serialise when a decoded string changed: otherwise the text keeps its form.
  if (walk(j, fn)) out = dump(j);
  return out;
}

}  // namespace pine::store::detail
