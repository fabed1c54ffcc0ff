#include "broker/telegram/update.h"

namespace pine::telegram {
namespace {

using nlohmann::json;

long long int64At(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_number_integer() ? j[key].get<long long>() : 0;
}

std::string textAt(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
}

Sender readSender(const json& u) {
  Sender s;
  s.id = int64At(u, "id");
  s.name = textAt(u, "first_name");
  std::string last = textAt(u, "last_name");
  if (!last.empty()) s.name += (s.name.empty() ? "" : " ") + last;
  s.username = textAt(u, "username");
  s.isBot = u.is_object() && u.contains("is_bot") && u["is_bot"].is_boolean() && u["is_bot"].get<bool>();
  return s;
}

// Who wrote a forwarded message first: forward_origin (Bot API 7) or the older fields.
std::optional<std::string> forwardOrigin(const json& m) {
  if (m.contains("forward_origin") && m["forward_origin"].is_object()) {
    const json& o = m["forward_origin"];
    std::string type = textAt(o, "type");
    if (type == "user" && o.contains("sender_user")) return describe(readSender(o["sender_user"]));
    if (type == "hidden_user") return textAt(o, "sender_user_name");
    if (type == "chat" && o.contains("sender_chat")) return textAt(o["sender_chat"], "title");
    if (type == "channel" && o.contains("chat")) return textAt(o["chat"], "title");
    return std::string();
  }
  if (m.contains("forward_from") && m["forward_from"].is_object()) return describe(readSender(m["forward_from"]));
  if (m.contains("forward_sender_name")) return textAt(m, "forward_sender_name");
  if (m.contains("forward_from_chat") && m["forward_from_chat"].is_object())
    return textAt(m["forward_from_chat"], "title");
  if (m.contains("forward_date")) return std::string();
  return std::nullopt;
}

void readFiles(const json& m, std::vector<IncomingFile>& out) {
  if (m.contains("photo") && m["photo"].is_array() && !m["photo"].empty()) {
    const json& largest = m["photo"].back();  // Telegram lists the sizes smallest first
    out.push_back({"photo", textAt(largest, "file_id"), "photo.jpg", int64At(largest, "file_size")});
  }
  if (m.contains("document") && m["document"].is_object()) {
    const json& d = m["document"];
    std::string name = textAt(d, "file_name");
    out.push_back({"document", textAt(d, "file_id"), name.empty() ? "document" : name, int64At(d, "file_size")});
  }
  if (m.contains("voice") && m["voice"].is_object())
    out.push_back({"voice", textAt(m["voice"], "file_id"), "voice.ogg", int64At(m["voice"], "file_size")});
  std::erase_if(out, [](const IncomingFile& f) { return f.fileId.empty(); });
}

}  // namespace

std::string describe(const Sender& s) {
  std::string out = s.name.empty() ? "(no name)" : s.name;
  out += " (";
  if (!s.username.empty()) out += "@" + s.username + ", ";
  return out + "id " + std::to_string(s.id) + ")";
}

std::optional<Incoming> readUpdate(const json& u) {
  if (!u.is_object()) return std::nullopt;
  Incoming in;
  in.updateId = int64At(u, "update_id");
  if (u.contains("callback_query") && u["callback_query"].is_object()) {
    const json& q = u["callback_query"];
    in.kind = Incoming::Kind::Callback;
    in.callbackId = textAt(q, "id");
    in.callbackData = textAt(q, "data");
    if (q.contains("from")) in.from = readSender(q["from"]);
    if (q.contains("message") && q["message"].is_object()) {
      in.messageId = int64At(q["message"], "message_id");
      if (q["message"].contains("chat")) in.chatId = int64At(q["message"]["chat"], "id");
      if (q["message"].contains("chat")) in.chatType = textAt(q["message"]["chat"], "type");
    }
    if (in.callbackId.empty() || in.from.id == 0) return std::nullopt;
    return in;
  }
  if (!u.contains("message") || !u["message"].is_object()) return std::nullopt;
  const json& m = u["message"];
  in.messageId = int64At(m, "message_id");
  if (m.contains("from")) in.from = readSender(m["from"]);
  if (m.contains("chat")) {
    in.chatId = int64At(m["chat"], "id");
    in.chatType = textAt(m["chat"], "type");
  }
  in.text = m.contains("text") ? textAt(m, "text") : textAt(m, "caption");
  in.forwardedFrom = forwardOrigin(m);
  readFiles(m, in.files);
  if (in.from.id == 0 || in.chatId == 0) return std::nullopt;
  return in;
}

}  // namespace pine::telegram
