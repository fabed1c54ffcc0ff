// What one of Telegram's updates says, read from the JSON it arrived as: who wrote, in which
// chat, what (text or caption, forwarded or not, files), or which button was pressed. Only the
// fields the channel uses; anything malformed reads as nothing (the update is dropped).
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace pine::telegram {

struct Sender {
  long long id = 0;
  std::string name;      // first and last name
  std::string username;  // without the @, may be empty
  bool isBot = false;
};

struct IncomingFile {
  std::string kind;    // photo, document, voice
  std::string fileId;
  std::string name;    // a document's own name, else made up from the kind
  long long size = 0;  // as Telegram says, 0 when it does not
};

struct Incoming {
  enum class Kind { Message, Callback } kind = Kind::Message;
  long long updateId = 0;
  Sender from;
  long long chatId = 0;
  std::string chatType;  // private, group, supergroup, channel
  long long messageId = 0;
  std::string text;      // the text, or a caption
  // Set when the message was forwarded: who wrote it first, as far as Telegram says.
  std::optional<std::string> forwardedFrom;
  std::vector<IncomingFile> files;
  std::string callbackId, callbackData;
};

std::optional<Incoming> readUpdate(const nlohmann::json& update);

// "Name (@username, id 123)", how the owner is shown an account.
std::string describe(const Sender& s);

}  // namespace pine::telegram
