// Telegram's updates and Bot API answers over any bytes (broker/telegram/update.h, and
// readReply of bot_api.h), as they come from the network through pined:
//   1. the bytes as JSON (when they parse) through readUpdate;
//   2. the bytes as the text, caption, callback data, file name, forwarder's name or chat
//      title of a valid update built here (ids, shape and forward origin drawn from a hash of
//      the input), so the reader runs past its first checks: the string comes back as it was;
//   3. the bytes, when they parse as shallow JSON, put in place of each field of a full
//      message update and of a callback query (wrong types where the reader expects others);
//   4. readReply on the raw bytes with status 200 and with a status drawn from the input
//      (any int when the input starts with '!'), and on envelopes that carry the bytes as
//      the description or (textually) as the result.
// Nothing may crash (ASan, UBSan) or throw; when readUpdate returns an update, from.id != 0,
// a message has chatId != 0 (a callback query may have none: one from an inline message
// carries no chat, and its card check refuses it), a callback query has an id, every file a
// kind and a non-empty fileId and name, and describe(from) ends in "id <from.id>)".
// readReply: no answer (status 0 or a transport error) is never ok and has error code 0; ok
// only with status 200; retryAfter within 1..3600.
#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "broker/telegram/bot_api.h"
#include "broker/telegram/update.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using nlohmann::json;
using pine::telegram::Incoming;

// An upper bound of the JSON's nesting (brackets inside strings count too): copying or
// comparing a json value recurses, so only shallow values are copied into templates.
std::size_t tgFuzzNesting(std::string_view s) {
  std::size_t depth = 0, most = 0;
  for (char c : s) {
    if (c == '[' || c == '{') most = std::max(most, ++depth);
    if ((c == ']' || c == '}') && depth > 0) --depth;
  }
  return most;
}

[[noreturn]] void tgFuzzThrew(const char* what, const char* message) {
  std::fprintf(stderr, "%s threw: %s\n", what, message);
  FUZZ_CHECK(false, "an exception escaped");
  std::abort();
}

std::optional<Incoming> tgFuzzRead(const json& update) {
  std::optional<Incoming> in;
  try {
    in = pine::telegram::readUpdate(update);
  } catch (const std::exception& e) {
    tgFuzzThrew("readUpdate", e.what());
  } catch (...) {
    tgFuzzThrew("readUpdate", "(not a std::exception)");
  }
  if (!in) return in;
  FUZZ_CHECK(in->from.id != 0, "an update without a sender id was accepted");
  if (in->kind == Incoming::Kind::Message) FUZZ_CHECK(in->chatId != 0, "a message without a chat id was accepted");
  if (in->kind == Incoming::Kind::Callback) FUZZ_CHECK(!in->callbackId.empty(), "a callback query without an id was accepted");
  for (const pine::telegram::IncomingFile& f : in->files) {
    FUZZ_CHECK(!f.fileId.empty(), "a file without a file_id was accepted");
    FUZZ_CHECK(f.kind == "photo" || f.kind == "document" || f.kind == "voice", "a file of an unknown kind");
    FUZZ_CHECK(!f.name.empty(), "a file without a name");
  }
  const std::string who = pine::telegram::describe(in->from);
  const std::string tail = "id " + std::to_string(in->from.id) + ")";
  FUZZ_CHECK(who.size() > tail.size() && who.compare(who.size() - tail.size(), tail.size(), tail) == 0,
             "describe() does not end in the sender's id");
  return in;
}

pine::telegram::BotReply tgFuzzReply(int status, const std::string& body, const std::string& transportError) {
  pine::telegram::BotReply r;
  try {
    r = pine::telegram::readReply(status, body, transportError);
  } catch (const std::exception& e) {
    tgFuzzThrew("readReply", e.what());
  } catch (...) {
    tgFuzzThrew("readReply", "(not a std::exception)");
  }
  if (status == 0 || !transportError.empty()) {
    FUZZ_CHECK(!r.ok && r.errorCode == 0 && !r.description.empty(), "no answer read as an answer");
  }
  if (r.ok) FUZZ_CHECK(status == 200 && r.errorCode == 0, "an ok reply without status 200");
  if (r.retryAfter) FUZZ_CHECK(*r.retryAfter >= 1 && *r.retryAfter <= 3600, "retryAfter outside 1..3600");
  return r;
}

constexpr long long kTgFuzzIds[] = {1, 42, -1, 0, 123456789, -1001234567890LL, LLONG_MAX, LLONG_MIN};

long long tgFuzzId(pine::fuzz::Rng& rng) { return kTgFuzzIds[rng.below(std::size(kTgFuzzIds))]; }

json tgFuzzUser(long long id, const std::string& name) {
  return {{"id", id}, {"is_bot", false}, {"first_name", name}, {"last_name", "Doe"}, {"username", "jdoe"},
          {"language_code", "en"}};
}

// A valid update of a shape drawn from rng, with `text` in one of its strings; checks that
// it reads back as built.
void tgFuzzWrapped(const std::string& text, pine::fuzz::Rng& rng) {
  const long long from = tgFuzzId(rng), chat = tgFuzzId(rng);
  const bool group = rng.next() & 1;
  json chatJson = group ? json{{"id", chat}, {"type", "supergroup"}, {"title", text}}
                        : json{{"id", chat}, {"type", "private"}, {"first_name", "Jane"}};
  json m = {{"message_id", 7}, {"from", tgFuzzUser(from, group ? "Jane" : text)}, {"chat", chatJson},
            {"date", 1733140000}};
  json u = {{"update_id", 900000001}};
  const std::size_t shape = rng.below(7);
  std::string wantText = text, wantName;
  switch (shape) {
    case 0: m["text"] = text; break;
    case 1:
      m["caption"] = text;
      m["photo"] = json::array({{{"file_id", "AgAC-small"}, {"file_unique_id", "s"}, {"file_size", 1234}, {"width", 90}},
                                {{"file_id", "AgAC-large"}, {"file_unique_id", "l"}, {"file_size", 98765}, {"width", 1280}}});
      break;
    case 2:
      m["document"] = {{"file_id", "BQAC-doc"}, {"file_unique_id", "d"}, {"file_name", text}, {"mime_type", "text/plain"},
                       {"file_size", 4321}};
      wantText.clear();
      wantName = text.empty() ? "document" : text;
      break;
    case 3:
      m["voice"] = {{"file_id", "AwAC-voice"}, {"file_unique_id", "v"}, {"duration", 3}, {"file_size", 2048}};
      m["caption"] = text;
      break;
    case 4: {
      m["text"] = "forwarded";
      wantText = "forwarded";
      static constexpr const char* kTypes[] = {"user", "hidden_user", "chat", "channel"};
      const char* type = kTypes[rng.below(4)];
      json origin = {{"type", type}, {"date", 1733130000}};
      if (type == std::string_view("user")) origin["sender_user"] = tgFuzzUser(5, text);
      if (type == std::string_view("hidden_user")) origin["sender_user_name"] = text;
      if (type == std::string_view("chat")) origin["sender_chat"] = {{"id", -100777}, {"type", "group"}, {"title", text}};
      if (type == std::string_view("channel"))
        origin["chat"] = {{"id", -100888}, {"type", "channel"}, {"title", text}}, origin["message_id"] = 3;
      m["forward_origin"] = origin;
      break;
    }
    case 5:
    case 6: {
      json q = {{"id", shape == 5 ? std::string("4382bfdwdsb323b2d9") : text},
                {"from", tgFuzzUser(from, "Jane")},
                {"chat_instance", "-123"},
                {"data", text}};
      if (rng.next() & 3) q["message"] = {{"message_id", 9}, {"chat", chatJson}, {"date", 1733140000}, {"text", "card"}};
      u["callback_query"] = q;
      std::optional<Incoming> in = tgFuzzRead(u);
      const std::string id = q["id"].get<std::string>();
      FUZZ_CHECK(in.has_value() == (from != 0 && !id.empty()), "a valid callback query was dropped or a bad one kept");
      if (in) {
        FUZZ_CHECK(in->kind == Incoming::Kind::Callback && in->callbackData == text && in->callbackId == id,
                   "a callback query read back differently");
        FUZZ_CHECK(!q.contains("message") || in->chatId == chat, "a callback query's chat read back differently");
      }
      return;
    }
  }
  u["message"] = m;
  std::optional<Incoming> in = tgFuzzRead(u);
  FUZZ_CHECK(in.has_value() == (from != 0 && chat != 0), "a valid message was dropped or a bad one kept");
  if (!in) return;
  FUZZ_CHECK(in->kind == Incoming::Kind::Message && in->text == wantText, "a message's text read back differently");
  FUZZ_CHECK(in->from.id == from && in->chatId == chat && in->updateId == 900000001, "a message's ids read back differently");
  FUZZ_CHECK(in->files.size() == (shape >= 1 && shape <= 3 ? 1u : 0u), "a message's files read back differently");
  if (shape == 1) FUZZ_CHECK(in->files[0].fileId == "AgAC-large", "a photo is not its largest size");
  if (shape == 2) FUZZ_CHECK(in->files[0].name == wantName, "a document's name read back differently");
  FUZZ_CHECK(in->forwardedFrom.has_value() == (shape == 4), "a forward read back differently");
}

// Full updates whose every field the parsed input replaces in turn.
const json& tgFuzzFullMessage() {
  static const json kFull = json::parse(R"({"update_id": 1, "message": {"message_id": 2,
    "from": {"id": 3, "is_bot": false, "first_name": "A", "last_name": "B", "username": "ab"},
    "chat": {"id": 4, "type": "group", "title": "T"}, "date": 5, "text": "hi", "caption": "c",
    "photo": [{"file_id": "p1", "file_size": 1}, {"file_id": "p2", "file_size": 2}],
    "document": {"file_id": "d", "file_name": "f.txt", "file_size": 3},
    "voice": {"file_id": "v", "file_size": 4},
    "forward_origin": {"type": "user", "sender_user": {"id": 6, "first_name": "F"},
                       "sender_user_name": "H", "sender_chat": {"title": "SC"}, "chat": {"title": "CH"}},
    "forward_from": {"id": 7, "first_name": "G"}, "forward_sender_name": "N",
    "forward_from_chat": {"title": "FC"}, "forward_date": 8}})");
  return kFull;
}

const json& tgFuzzFullCallback() {
  static const json kFull = json::parse(R"({"update_id": 1, "callback_query": {"id": "q",
    "from": {"id": 3, "is_bot": false, "first_name": "A", "username": "ab"}, "data": "y:1",
    "message": {"message_id": 2, "chat": {"id": 4, "type": "private"}}}})");
  return kFull;
}

// Every place of a json value, as JSON pointers.
void tgFuzzPointers(const json& j, const std::string& at, std::vector<std::string>& out) {
  out.push_back(at);
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) tgFuzzPointers(it.value(), at + "/" + it.key(), out);
  } else if (j.is_array()) {
    for (std::size_t k = 0; k < j.size(); ++k) tgFuzzPointers(j[k], at + "/" + std::to_string(k), out);
  }
}

void tgFuzzInjected(const json& value) {
  static const std::vector<std::string> kMessagePlaces = [] {
    std::vector<std::string> out;
    tgFuzzPointers(tgFuzzFullMessage(), "", out);
    return out;
  }();
  static const std::vector<std::string> kCallbackPlaces = [] {
    std::vector<std::string> out;
    tgFuzzPointers(tgFuzzFullCallback(), "", out);
    return out;
  }();
  for (const auto* places : {&kMessagePlaces, &kCallbackPlaces}) {
    for (const std::string& place : *places) {
      if (place.empty()) continue;  // the whole update: step 1 reads the value itself
      json u = places == &kMessagePlaces ? tgFuzzFullMessage() : tgFuzzFullCallback();
      u[json::json_pointer(place)] = value;
      tgFuzzRead(u);
    }
  }
}

// `value`: whether the bytes are one JSON value that can stand inside another.
void tgFuzzReplies(const std::string& bytes, bool value, pine::fuzz::Rng& rng) {
  static constexpr int kStatuses[] = {200, 200, 200, 0, 400, 401, 403, 404, 409, 429, 500, 502};
  int status = kStatuses[rng.below(std::size(kStatuses))];
  if (!bytes.empty() && bytes[0] == '!') status = static_cast<int>(static_cast<std::int32_t>(rng.next()));
  tgFuzzReply(200, bytes, "");  // the status under which the result is read
  tgFuzzReply(status, bytes, "");
  tgFuzzReply(status, bytes, rng.next() & 1 ? "timeout" : "connection refused");
  // The bytes as Telegram's words, and (textually) as the result of an ok answer.
  json error = {{"ok", false}, {"error_code", 429}, {"description", bytes},
                {"parameters", {{"retry_after", static_cast<long long>(rng.next())}}}};
  pine::telegram::BotReply r = tgFuzzReply(429, error.dump(-1, ' ', false, json::error_handler_t::replace), "");
  FUZZ_CHECK(!r.ok && r.errorCode == 429 && r.retryAfter.has_value(), "a 429 envelope read back differently");
  if (tgFuzzNesting(bytes) <= 64) {  // readReply copies the result, which recurses
    r = tgFuzzReply(200, "{\"ok\": true, \"result\": " + bytes + "}", "");
    FUZZ_CHECK(!value || r.ok, "an ok envelope with a valid result was not ok");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  pine::fuzz::Rng rng{pine::fuzz::hashOf(bytes)};
  json parsed = json::parse(bytes, nullptr, false);
  if (!parsed.is_discarded()) {
    tgFuzzRead(parsed);
    if (tgFuzzNesting(bytes) <= 64) tgFuzzInjected(parsed);
  }
  tgFuzzWrapped(bytes, rng);
  // nlohmann-json skips a BOM at the start and ends the input at a NUL: such bytes parse
  // alone but not inside the envelope.
  const bool value = !parsed.is_discarded() && bytes.rfind("\xEF\xBB\xBF", 0) != 0 && bytes.find('\0') == std::string::npos;
  tgFuzzReplies(bytes, value, rng);
  return 0;
}
