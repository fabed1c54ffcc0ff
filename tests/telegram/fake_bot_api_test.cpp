// Self-test of the fake Telegram Bot API, driven by a tiny raw-socket HTTP client.
#include "tests/telegram/fake_bot_api.h"
#include "common/send_no_signal.h"

#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <thread>

namespace pine::telegram::test {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

const std::string kFakeTgToken = "123456:ABC-fake_token";

struct FakeTgReply {
  bool answered = false;  // false: the connection closed before a whole answer
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  json parsed() const { return json::parse(body); }
};

// One connection to the fake; several requests may go over it (keep-alive).
class FakeTgConn {
 public:
  explicit FakeTgConn(const std::string& baseUrl) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(std::stoi(baseUrl.substr(baseUrl.rfind(':') + 1))));
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  }
  ~FakeTgConn() { ::close(fd_); }
  FakeTgConn(const FakeTgConn&) = delete;
  FakeTgConn& operator=(const FakeTgConn&) = delete;

  void sendRaw(const std::string& bytes) {
    std::size_t off = 0;
    while (off < bytes.size()) {
      ssize_t n = pine::sendNoSignal(fd_, bytes.data() + off, bytes.size() - off, 0);
      if (n <= 0) return;
      off += static_cast<std::size_t>(n);
    }
  }

  FakeTgReply request(const std::string& verb, const std::string& target, const std::string& body,
                      const std::string& contentType, bool keepAlive = false, bool chunked = false) {
    std::string out = verb + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    out += keepAlive ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
    if (!contentType.empty()) out += "Content-Type: " + contentType + "\r\n";
    if (chunked) {
      // Two chunks, to exercise the reassembly.
      std::size_t half = body.size() / 2;
      char a[32], b[32];
      std::snprintf(a, sizeof a, "%zx", half);
      std::snprintf(b, sizeof b, "%zx", body.size() - half);
      out += "Transfer-Encoding: chunked\r\n\r\n";
      out += std::string(a) + "\r\n" + body.substr(0, half) + "\r\n";
      out += std::string(b) + ";ext=1\r\n" + body.substr(half) + "\r\n0\r\n\r\n";
    } else {
      out += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    }
    sendRaw(out);
    return read();
  }

  // The status of an interim answer (a head without a body, e.g. 100 Continue); 0 if none.
  int readInterim() {
    std::size_t headEnd;
    while ((headEnd = buf_.find("\r\n\r\n")) == std::string::npos)
      if (!more()) return 0;
    std::string head = buf_.substr(0, headEnd);
    buf_.erase(0, headEnd + 4);
    return std::stoi(head.substr(head.find(' ') + 1, 3));
  }

  // One answer: the head, then Content-Length bytes (the fake always sends the length).
  FakeTgReply read() {
    FakeTgReply r;
    std::size_t headEnd;
    while ((headEnd = buf_.find("\r\n\r\n")) == std::string::npos)
      if (!more()) return r;
    std::string head = buf_.substr(0, headEnd);
    buf_.erase(0, headEnd + 4);
    r.status = std::stoi(head.substr(head.find(' ') + 1, 3));
    for (std::size_t at = head.find("\r\n"); at != std::string::npos && at < head.size();) {
      auto end = head.find("\r\n", at + 2);
      std::string line = head.substr(at + 2, end == std::string::npos ? std::string::npos : end - at - 2);
      auto colon = line.find(':');
      if (colon != std::string::npos) {
        std::string name = line.substr(0, colon);
        for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        r.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
      }
      at = end;
    }
    std::size_t want = std::stoul(r.headers.at("content-length"));
    while (buf_.size() < want)
      if (!more()) return r;
    r.body = buf_.substr(0, want);
    buf_.erase(0, want);
    r.answered = true;
    return r;
  }

 private:
  bool more() {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 20000) <= 0) return false;
    char chunk[16384];
    ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n <= 0) return false;
    buf_.append(chunk, static_cast<std::size_t>(n));
    return true;
  }

  int fd_ = -1;
  std::string buf_;
};

FakeTgReply fakeTgHttp(const FakeBotApi& fake, const std::string& verb, const std::string& target,
                       const std::string& body = "", const std::string& contentType = "") {
  FakeTgConn conn(fake.baseUrl());
  return conn.request(verb, target, body, contentType);
}

// A Bot API call with a JSON body, the way most clients make it.
FakeTgReply fakeTgCall(const FakeBotApi& fake, const std::string& method, const json& params = json::object()) {
  return fakeTgHttp(fake, "POST", "/bot" + fake.token() + "/" + method, params.dump(), "application/json");
}

json fakeTgOk(const FakeTgReply& r) {
  REQUIRE(r.answered);
  INFO(r.body);
  REQUIRE(r.status == 200);
  json j = r.parsed();
  REQUIRE(j["ok"] == true);
  return j["result"];
}

std::string fakeTgBadRequest(const FakeTgReply& r) {
  REQUIRE(r.answered);
  INFO(r.body);
  REQUIRE(r.status == 400);
  json j = r.parsed();
  CHECK(j["ok"] == false);
  CHECK(j["error_code"] == 400);
  return j["description"].get<std::string>();
}

const User kFakeTgAlice{42, "Alice", "Liddell", "alice"};
const Chat kFakeTgAliceChat{42, "private", ""};

json fakeTgSend(const std::string& text, const std::string& parseMode = "") {
  json p = {{"chat_id", kFakeTgAliceChat.id}, {"text", text}};
  if (!parseMode.empty()) p["parse_mode"] = parseMode;
  return p;
}

std::string fakeTgRepeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

}  // namespace

TEST_CASE("fake bot api: getMe, tokens and unknown methods") {
  FakeBotApi fake(kFakeTgToken);
  json me = fakeTgOk(fakeTgCall(fake, "getMe"));
  CHECK(me["id"] == 123456);
  CHECK(me["is_bot"] == true);
  CHECK(me["username"] == "pine_test_bot");
  CHECK(fakeTgOk(fakeTgCall(fake, "GETME"))["id"] == 123456);  // method names are case-insensitive

  auto wrong = fakeTgHttp(fake, "POST", "/bot999:nope/getMe", "{}", "application/json");
  CHECK(wrong.status == 401);
  CHECK(wrong.body == R"({"ok":false,"error_code":401,"description":"Unauthorized"})");

  auto unknown = fakeTgCall(fake, "sendTelepathy");
  CHECK(unknown.status == 404);
  CHECK(unknown.body == R"({"ok":false,"error_code":404,"description":"Not Found"})");
  CHECK(fakeTgHttp(fake, "GET", "/elsewhere").status == 404);

  fake.setTokenRevoked(true);
  CHECK(fakeTgCall(fake, "getMe").status == 401);
  fake.setTokenRevoked(false);
  CHECK(fakeTgCall(fake, "getMe").status == 200);
  CHECK(fake.callsOf("getMe").size() == 3);  // only calls that reached a method
}

TEST_CASE("fake bot api: a long poll returns when an update is added from another thread") {
  FakeBotApi fake(kFakeTgToken);
  std::thread adder([&] {
    REQUIRE(fake.waitForCall("getUpdates", nullptr, 5s));
    std::this_thread::sleep_for(100ms);
    fake.addTextMessage(kFakeTgAlice, kFakeTgAliceChat, "/start now");
  });
  auto start = std::chrono::steady_clock::now();
  json result = fakeTgOk(fakeTgCall(fake, "getUpdates", {{"timeout", 20}}));
  auto elapsed = std::chrono::steady_clock::now() - start;
  adder.join();
  CHECK(elapsed >= 100ms);
  CHECK(elapsed < 5s);
  REQUIRE(result.size() == 1);
  const json& msg = result[0]["message"];
  CHECK(result[0]["update_id"].is_number_integer());
  CHECK(msg["text"] == "/start now");
  CHECK(msg["message_id"] == 1);
  CHECK(msg["from"] == json{{"id", 42}, {"is_bot", false}, {"first_name", "Alice"}, {"last_name", "Liddell"},
                            {"username", "alice"}});
  CHECK(msg["chat"] == json{{"id", 42}, {"type", "private"}, {"first_name", "Alice"}, {"last_name", "Liddell"},
                            {"username", "alice"}});
  CHECK(msg["entities"] == json::parse(R"([{"type":"bot_command","offset":0,"length":6}])"));
  CHECK(fake.activePolls() == 0);
}

TEST_CASE("fake bot api: an offset confirms, limit caps, a timeout answers []") {
  FakeBotApi fake(kFakeTgToken);
  int64_t first = fake.addTextMessage(kFakeTgAlice, kFakeTgAliceChat, "one");
  int64_t second = fake.addTextMessage(kFakeTgAlice, kFakeTgAliceChat, "two");
  CHECK(second == first + 1);
  CHECK(fake.pendingUpdates() == 2);

  CHECK(fakeTgOk(fakeTgCall(fake, "getUpdates")).size() == 2);  // no offset: nothing confirmed
  CHECK(fake.pendingUpdates() == 2);
  json limited = fakeTgOk(fakeTgCall(fake, "getUpdates", {{"limit", 1}}));
  REQUIRE(limited.size() == 1);
  CHECK(limited[0]["update_id"] == first);

  json rest = fakeTgOk(fakeTgCall(fake, "getUpdates", {{"offset", first + 1}}));
  REQUIRE(rest.size() == 1);
  CHECK(rest[0]["message"]["text"] == "two");
  CHECK(fake.pendingUpdates() == 1);
  CHECK(fake.confirmedUpTo() == first + 1);

  auto start = std::chrono::steady_clock::now();
  json none = fakeTgOk(fakeTgCall(fake, "getUpdates", {{"offset", second + 1}, {"timeout", 1}}));
  auto elapsed = std::chrono::steady_clock::now() - start;
  CHECK(none == json::array());
  CHECK(elapsed >= 900ms);
  CHECK(elapsed < 3s);
  CHECK(fake.pendingUpdates() == 0);
  CHECK(fake.confirmedUpTo() == second + 1);
}

TEST_CASE("fake bot api: a second concurrent getUpdates gets 409") {
  FakeBotApi fake(kFakeTgToken);
  json held;
  std::thread poller([&] { held = fakeTgOk(fakeTgCall(fake, "getUpdates", {{"timeout", 10}})); });
  REQUIRE(fake.waitForCall("getUpdates", nullptr, 5s));
  CHECK(fake.activePolls() == 1);

  auto second = fakeTgCall(fake, "getUpdates", {{"timeout", 10}});
  CHECK(second.status == 409);
  json body = second.parsed();
  CHECK(body["ok"] == false);
  CHECK(body["error_code"] == 409);
  CHECK(body["description"].get<std::string>().rfind("Conflict: terminated by other getUpdates request", 0) == 0);

  fake.addTextMessage(kFakeTgAlice, kFakeTgAliceChat, "release");
  poller.join();
  REQUIRE(held.size() == 1);
  CHECK(fake.activePolls() == 0);
  CHECK(fakeTgOk(fakeTgCall(fake, "getUpdates")).size() == 1);  // free again
}

TEST_CASE("fake bot api: an abandoned poll frees its slot") {
  FakeBotApi fake(kFakeTgToken);
  {
    FakeTgConn conn(fake.baseUrl());
    conn.sendRaw("POST /bot" + kFakeTgToken + "/getUpdates HTTP/1.1\r\nContent-Type: application/json\r\n"
                 "Content-Length: 14\r\n\r\n{\"timeout\":30}");
    REQUIRE(fake.waitForCall("getUpdates", nullptr, 5s));
  }  // closed without waiting for the answer
  auto start = std::chrono::steady_clock::now();
  CHECK(fakeTgCall(fake, "getUpdates", {{"timeout", 0}}).status == 200);
  CHECK(std::chrono::steady_clock::now() - start < 2s);
}

TEST_CASE("fake bot api: allowed_updates is recorded and filters") {
  FakeBotApi fake(kFakeTgToken);
  CHECK_FALSE(fake.allowedUpdates());
  fake.addCallbackQuery(kFakeTgAlice, kFakeTgAliceChat, 1, "ignored");
  fake.addTextMessage(kFakeTgAlice, kFakeTgAliceChat, "kept");
  // Form-encoded, as some clients send it: the list is a JSON-serialized string.
  auto r = fakeTgHttp(fake, "POST", "/bot" + kFakeTgToken + "/getUpdates", "allowed_updates=%5B%22message%22%5D&timeout=0",
                      "application/x-www-form-urlencoded");
  json result = fakeTgOk(r);
  REQUIRE(result.size() == 1);
  CHECK(result[0]["message"]["text"] == "kept");
  REQUIRE(fake.allowedUpdates());
  CHECK(*fake.allowedUpdates() == json::array({"message"}));
  auto call = fake.callsOf("getUpdates").at(0);
  CHECK(call.encoding == "form");
  CHECK(call.params["timeout"] == 0);
  CHECK(call.params["allowed_updates"] == json::array({"message"}));
}

TEST_CASE("fake bot api: scripted failures") {
  FakeBotApi fake(kFakeTgToken);
  fake.failNext("sendMessage", 429, "", 7);
  fake.failNext("sendMessage", 502, "");
  fake.failNext("getMe", 403, "Forbidden: bot was blocked by the user");

  auto limited = fakeTgCall(fake, "sendMessage", fakeTgSend("hi"));
  CHECK(limited.status == 429);
  CHECK(limited.headers["retry-after"] == "7");
  CHECK(limited.parsed() == json::parse(R"({"ok":false,"error_code":429,"description":"Too Many Requests: retry after 7",
                                            "parameters":{"retry_after":7}})"));
  auto gateway = fakeTgCall(fake, "sendMessage", fakeTgSend("hi"));
  CHECK(gateway.status == 502);
  CHECK(gateway.body == R"({"ok":false,"error_code":502,"description":"Bad Gateway"})");
  auto blocked = fakeTgCall(fake, "getMe");
  CHECK(blocked.status == 403);
  CHECK(blocked.parsed()["description"] == "Forbidden: bot was blocked by the user");

  CHECK(fakeTgOk(fakeTgCall(fake, "sendMessage", fakeTgSend("hi")))["text"] == "hi");
  CHECK(fake.sent(kFakeTgAliceChat.id).size() == 1);  // the failed ones stored nothing
  auto sends = fake.callsOf("sendMessage");
  REQUIRE(sends.size() == 3);
  CHECK(sends[0].status == 429);
  CHECK(sends[1].status == 502);
  CHECK(sends[2].status == 200);

  fake.dropNextConnection("sendChatAction");
  auto dropped = fakeTgCall(fake, "sendChatAction", {{"chat_id", 42}, {"action", "typing"}});
  CHECK_FALSE(dropped.answered);
  CHECK(fakeTgOk(fakeTgCall(fake, "sendChatAction", {{"chat_id", 42}, {"action", "typing"}})) == true);
  auto actions = fake.callsOf("sendChatAction");
  REQUIRE(actions.size() == 2);
  CHECK(actions[0].status == 0);
  CHECK(actions[1].params["action"] == "typing");
}

TEST_CASE("fake bot api: sendMessage HTML parsing and length") {
  FakeBotApi fake(kFakeTgToken);
  json msg = fakeTgOk(fakeTgCall(
      fake, "sendMessage",
      fakeTgSend("<b>Bold</b> &amp; <a href=\"https://example.org/?a=1&amp;b=2\">link</a> &#128512;&lt;3", "HTML")));
  CHECK(msg["text"] == "Bold & link \xF0\x9F\x98\x80<3");
  CHECK(msg["from"]["is_bot"] == true);
  CHECK(msg["chat"]["id"] == 42);
  CHECK(msg["date"].is_number_integer());
  CHECK(msg["entities"] == json::parse(R"([{"type":"bold","offset":0,"length":4},
      {"type":"text_link","url":"https://example.org/?a=1&b=2","offset":7,"length":4}])"));
  CHECK(fakeTgOk(fakeTgCall(fake, "sendMessage", fakeTgSend("two")))["message_id"] ==
        msg["message_id"].get<int64_t>() + 1);

  json pre = fakeTgOk(fakeTgCall(fake, "sendMessage",
                                 fakeTgSend("<pre><code class=\"language-cpp\">int x;</code></pre>", "HTML")));
  CHECK(pre["entities"] == json::parse(R"([{"type":"pre","language":"cpp","offset":0,"length":6}])"));

  auto bad = [&](const std::string& text) {
    return fakeTgBadRequest(fakeTgCall(fake, "sendMessage", fakeTgSend(text, "HTML")));
  };
  CHECK(bad("<foo>x</foo>") == "Bad Request: can't parse entities: Unsupported start tag \"foo\" at byte offset 0");
  CHECK(bad("<b>x") == "Bad Request: can't parse entities: Can't find end tag corresponding to start tag \"b\"");
  CHECK(bad("a < b") == "Bad Request: can't parse entities: Unsupported start tag \"\" at byte offset 2");
  CHECK(bad("x <b") == "Bad Request: can't parse entities: Unclosed start tag at byte offset 2");
  CHECK(bad("<b>x</i>") ==
        "Bad Request: can't parse entities: Unmatched end tag at byte offset 4, expected \"</b>\", found \"</i>\"");
  CHECK(bad("x</b>") == "Bad Request: can't parse entities: Unexpected end tag at byte offset 1");
  CHECK(bad("fish & chips").rfind("Bad Request: can't parse entities: ", 0) == 0);
  CHECK(bad("&bogus;").rfind("Bad Request: can't parse entities: ", 0) == 0);
  CHECK(bad("<b></b>") == "Bad Request: message text is empty");
  // Not HTML: the same characters are plain text.
  CHECK(fakeTgOk(fakeTgCall(fake, "sendMessage", fakeTgSend("fish & chips < 5")))["text"] == "fish & chips < 5");
  CHECK(fakeTgBadRequest(fakeTgCall(fake, "sendMessage", {{"chat_id", 42}})) == "Bad Request: message text is empty");

  // The limit counts what is shown, in UTF-16 units.
  CHECK(fakeTgOk(fakeTgCall(fake, "sendMessage", fakeTgSend(fakeTgRepeat("&amp;", 4096), "HTML")))["text"] ==
        std::string(4096, '&'));
  CHECK(bad(fakeTgRepeat("&amp;", 4097)) == "Bad Request: message is too long");
  CHECK(fakeTgOk(fakeTgCall(fake, "sendMessage", fakeTgSend("<i>" + std::string(4096, 'x') + "</i>", "HTML")))
            .contains("entities"));  // tags do not count
  const std::string emoji = "\xF0\x9F\x98\x80";                                                 // two units each
  CHECK(fakeTgOk(fakeTgCall(fake, "sendMessage", fakeTgSend(fakeTgRepeat(emoji, 2048)))).contains("text"));
  CHECK(fakeTgBadRequest(fakeTgCall(fake, "sendMessage", fakeTgSend(fakeTgRepeat(emoji, 2049)))) ==
        "Bad Request: message is too long");
}

TEST_CASE("fake bot api: inline keyboards and callback_data") {
  FakeBotApi fake(kFakeTgToken);
  auto keyboard = [](const std::string& data) {
    return json{{"inline_keyboard", json::array({json::array({{{"text", "Approve"}, {"callback_data", data}}})})}};
  };
  json p = fakeTgSend("approve?");
  p["reply_markup"] = keyboard(std::string(65, 'd'));
  CHECK(fakeTgBadRequest(fakeTgCall(fake, "sendMessage", p)) == "Bad Request: BUTTON_DATA_INVALID");
  p["reply_markup"] = keyboard("");
  CHECK(fakeTgBadRequest(fakeTgCall(fake, "sendMessage", p)) == "Bad Request: BUTTON_DATA_INVALID");
  p["reply_markup"] = keyboard(std::string(64, 'd'));
  json msg = fakeTgOk(fakeTgCall(fake, "sendMessage", p));
  CHECK(msg["reply_markup"] == keyboard(std::string(64, 'd')));
  auto sent = fake.sent(42);
  REQUIRE(sent.size() == 1);
  CHECK(sent[0]["reply_markup"] == keyboard(std::string(64, 'd')));
}

TEST_CASE("fake bot api: editMessageText") {
  FakeBotApi fake(kFakeTgToken);
  json msg = fakeTgOk(fakeTgCall(fake, "sendMessage", fakeTgSend("working")));
  json edit = {{"chat_id", 42}, {"message_id", msg["message_id"]}, {"text", "<b>done</b>"}, {"parse_mode", "HTML"}};
  json edited = fakeTgOk(fakeTgCall(fake, "editMessageText", edit));
  CHECK(edited["text"] == "done");
  CHECK(edited.contains("edit_date"));
  CHECK(fake.sent(42).at(0)["text"] == "done");

  CHECK(fakeTgBadRequest(fakeTgCall(fake, "editMessageText", edit)).rfind("Bad Request: message is not modified: ", 0) == 0);
  edit["parse_mode"] = nullptr;  // the same characters without the bold entity are a change
  CHECK(fakeTgOk(fakeTgCall(fake, "editMessageText", edit))["text"] == "<b>done</b>");
  edit["message_id"] = 999;
  CHECK(fakeTgBadRequest(fakeTgCall(fake, "editMessageText", edit)) == "Bad Request: message to edit not found");
  int64_t incoming = fake.addTextMessage(kFakeTgAlice, kFakeTgAliceChat, "mine");
  (void)incoming;
  edit["message_id"] = msg["message_id"].get<int64_t>() + 1;  // Alice's message shares the chat's numbering
  CHECK(fakeTgBadRequest(fakeTgCall(fake, "editMessageText", edit)) == "Bad Request: message can't be edited");
}

TEST_CASE("fake bot api: callback queries are answered once") {
  FakeBotApi fake(kFakeTgToken);
  json p = fakeTgSend("approve?");
  p["reply_markup"] = {{"inline_keyboard", {{{{"text", "Yes"}, {"callback_data", "yes:1"}}}}}};
  json msg = fakeTgOk(fakeTgCall(fake, "sendMessage", p));
  auto injected = fake.addCallbackQuery(kFakeTgAlice, kFakeTgAliceChat, msg["message_id"], "yes:1");

  json updates = fakeTgOk(fakeTgCall(fake, "getUpdates"));
  REQUIRE(updates.size() == 1);
  CHECK(updates[0]["update_id"] == injected.updateId);
  const json& query = updates[0]["callback_query"];
  CHECK(query["id"] == injected.queryId);
  CHECK(query["data"] == "yes:1");
  CHECK(query["from"]["id"] == 42);
  CHECK(query["chat_instance"].is_string());
  CHECK(query["message"]["message_id"] == msg["message_id"]);
  CHECK(query["message"]["reply_markup"] == p["reply_markup"]);

  json answer = {{"callback_query_id", injected.queryId}, {"text", "Approved"}};
  CHECK(fakeTgOk(fakeTgCall(fake, "answerCallbackQuery", answer)) == true);
  const std::string expired = "Bad Request: query is too old and response timeout expired or query ID is invalid";
  CHECK(fakeTgBadRequest(fakeTgCall(fake, "answerCallbackQuery", answer)) == expired);
  CHECK(fakeTgBadRequest(fakeTgCall(fake, "answerCallbackQuery", {{"callback_query_id", "nope"}})) == expired);
  CHECK(fake.callsOf("answerCallbackQuery").at(0).params["text"] == "Approved");

  // An unknown message arrives as an InaccessibleMessage.
  fake.addCallbackQuery(kFakeTgAlice, kFakeTgAliceChat, 77, "late");
  json late = fakeTgOk(fakeTgCall(fake, "getUpdates", {{"offset", injected.updateId + 1}}));
  REQUIRE(late.size() == 1);
  CHECK(late[0]["callback_query"]["message"]["date"] == 0);
}

TEST_CASE("fake bot api: getFile and the download") {
  FakeBotApi fake(kFakeTgToken);
  const std::string bytes("%PDF-1.7\0\x01\x02 binary\r\n\r\n", 22);
  fake.addDocument(kFakeTgAlice, kFakeTgAliceChat, "the report", "report.pdf", "application/pdf", bytes);
  fake.addPhoto(kFakeTgAlice, kFakeTgAliceChat, "", std::string(10000, 'p'));
  fake.addVoice(kFakeTgAlice, kFakeTgAliceChat, "OggS....", 3);
  json updates = fakeTgOk(fakeTgCall(fake, "getUpdates"));
  REQUIRE(updates.size() == 3);

  const json& doc = updates[0]["message"]["document"];
  CHECK(updates[0]["message"]["caption"] == "the report");
  CHECK(doc["file_name"] == "report.pdf");
  CHECK(doc["mime_type"] == "application/pdf");
  CHECK(doc["file_size"] == bytes.size());
  json file = fakeTgOk(fakeTgCall(fake, "getFile", {{"file_id", doc["file_id"]}}));
  CHECK(file["file_id"] == doc["file_id"]);
  CHECK(file["file_unique_id"] == doc["file_unique_id"]);
  CHECK(file["file_size"] == bytes.size());
  auto download = fakeTgHttp(fake, "GET", "/file/bot" + kFakeTgToken + "/" + file["file_path"].get<std::string>());
  CHECK(download.status == 200);
  CHECK(download.headers["content-type"] == "application/octet-stream");
  CHECK(download.body == bytes);

  const json& photo = updates[1]["message"]["photo"];
  REQUIRE(photo.size() == 2);
  CHECK(photo[1]["width"] == 1280);
  CHECK(photo[1]["height"] == 960);
  CHECK(photo[0]["width"] < photo[1]["width"]);
  json big = fakeTgOk(fakeTgCall(fake, "getFile", {{"file_id", photo[1]["file_id"]}}));
  CHECK(fakeTgHttp(fake, "GET", "/file/bot" + kFakeTgToken + "/" + big["file_path"].get<std::string>()).body ==
        std::string(10000, 'p'));
  CHECK(updates[2]["message"]["voice"]["duration"] == 3);
  CHECK(updates[2]["message"]["voice"]["mime_type"] == "audio/ogg");

  CHECK(fakeTgBadRequest(fakeTgCall(fake, "getFile", {{"file_id", "nope"}})) == "Bad Request: invalid file_id");
  CHECK(fakeTgHttp(fake, "GET", "/file/bot" + kFakeTgToken + "/documents/none.pdf").status == 404);
  CHECK(fakeTgHttp(fake, "GET", "/file/bot1:wrong/" + file["file_path"].get<std::string>()).status == 401);
}

TEST_CASE("fake bot api: a forwarded message has the real shape") {
  FakeBotApi fake(kFakeTgToken);
  const User bob{77, "Bob", "", ""};
  fake.addForwardedMessage(kFakeTgAlice, kFakeTgAliceChat, "look at this", bob);
  json updates = fakeTgOk(fakeTgCall(fake, "getUpdates"));
  REQUIRE(updates.size() == 1);
  const json& msg = updates[0]["message"];
  CHECK(msg["text"] == "look at this");
  CHECK(msg["from"]["id"] == 42);
  CHECK(msg["forward_origin"]["type"] == "user");
  CHECK(msg["forward_origin"]["sender_user"] == json{{"id", 77}, {"is_bot", false}, {"first_name", "Bob"}});
  CHECK(msg["forward_origin"]["date"].is_number_integer());
  CHECK(msg["forward_from"]["id"] == 77);
  CHECK(msg["forward_date"] == msg["forward_origin"]["date"]);

  const Chat group{-1001234, "supergroup", "Ops"};
  fake.addTextMessage(kFakeTgAlice, group, "in the group");
  json more = fakeTgOk(fakeTgCall(fake, "getUpdates", {{"offset", updates[0]["update_id"].get<int64_t>() + 1}}));
  REQUIRE(more.size() == 1);
  CHECK(more[0]["message"]["chat"] == json{{"id", -1001234}, {"type", "supergroup"}, {"title", "Ops"}});
}

TEST_CASE("fake bot api: form, query string, chunked and keep-alive requests") {
  FakeBotApi fake(kFakeTgToken);
  auto form = fakeTgHttp(fake, "POST", "/bot" + kFakeTgToken + "/sendMessage",
                         "chat_id=42&text=a+b%26c&reply_markup=" "%7B%22inline_keyboard%22%3A%5B%5B%7B%22text%22%3A%22ok%22"
                         "%2C%22callback_data%22%3A%22x%22%7D%5D%5D%7D",
                         "application/x-www-form-urlencoded");
  json msg = fakeTgOk(form);
  CHECK(msg["text"] == "a b&c");
  CHECK(msg["reply_markup"]["inline_keyboard"][0][0]["callback_data"] == "x");
  CHECK(fake.callsOf("sendMessage").at(0).params["chat_id"] == 42);

  CHECK(fakeTgOk(fakeTgHttp(fake, "GET", "/bot" + kFakeTgToken + "/sendChatAction?chat_id=42&action=typing")) == true);
  CHECK(fake.callsOf("sendChatAction").at(0).encoding == "query");
  CHECK(fakeTgBadRequest(fakeTgHttp(fake, "GET", "/bot" + kFakeTgToken + "/sendChatAction?chat_id=42&action=dancing")) ==
        "Bad Request: wrong parameter action in request");

  FakeTgConn conn(fake.baseUrl());
  auto chunked = conn.request("POST", "/bot" + kFakeTgToken + "/sendMessage",
                              json{{"chat_id", 42}, {"text", "chunked"}}.dump(), "application/json; charset=utf-8",
                              /*keepAlive=*/true, /*chunked=*/true);
  CHECK(fakeTgOk(chunked)["text"] == "chunked");
  CHECK(chunked.headers["connection"] == "keep-alive");
  auto again = conn.request("POST", "/bot" + kFakeTgToken + "/getMe", "", "", /*keepAlive=*/true);
  CHECK(fakeTgOk(again)["is_bot"] == true);

  // Expect: 100-continue, as libcurl sends it for bodies over 1 KiB: the body follows the 100.
  const std::string body = json{{"chat_id", 42}, {"text", std::string(2000, 'l')}}.dump();
  conn.sendRaw("POST /bot" + kFakeTgToken + "/sendMessage HTTP/1.1\r\nContent-Type: application/json\r\n"
               "Expect: 100-continue\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n");
  CHECK(conn.readInterim() == 100);
  conn.sendRaw(body);
  CHECK(fakeTgOk(conn.read())["text"] == std::string(2000, 'l'));
  CHECK(fake.sent(42).size() == 3);
}

TEST_CASE("fake bot api: waitForMessage and replies") {
  FakeBotApi fake(kFakeTgToken);
  int64_t update = fake.addTextMessage(kFakeTgAlice, kFakeTgAliceChat, "question");
  (void)update;
  std::thread sender([&] {
    std::this_thread::sleep_for(50ms);
    json p = fakeTgSend("answer");
    p["reply_parameters"] = {{"message_id", 1}};
    fakeTgOk(fakeTgCall(fake, "sendMessage", p));
  });
  auto found = fake.waitForMessage(42, [](const json& m) { return m["text"] == "answer"; }, 5s);
  sender.join();
  REQUIRE(found);
  CHECK((*found)["reply_to_message"]["text"] == "question");
  CHECK_FALSE(fake.waitForMessage(42, [](const json& m) { return m["text"] == "never"; }, 50ms));
  CHECK_FALSE(fake.waitForCall("sendMessage", [](const json& p) { return p["text"] == "never"; }, 50ms));

  json p = fakeTgSend("orphan");
  p["reply_parameters"] = {{"message_id", 500}};
  CHECK(fakeTgBadRequest(fakeTgCall(fake, "sendMessage", p)) == "Bad Request: message to be replied not found");
  p["reply_parameters"]["allow_sending_without_reply"] = true;
  CHECK_FALSE(fakeTgOk(fakeTgCall(fake, "sendMessage", p)).contains("reply_to_message"));
}

TEST_CASE("fake bot api: the destructor ends a held poll promptly") {
  auto fake = std::make_unique<FakeBotApi>(kFakeTgToken);
  FakeTgConn conn(fake->baseUrl());
  conn.sendRaw("POST /bot" + kFakeTgToken + "/getUpdates HTTP/1.1\r\nContent-Type: application/json\r\n"
               "Content-Length: 14\r\n\r\n{\"timeout\":30}");
  REQUIRE(fake->waitForCall("getUpdates", nullptr, 5s));
  FakeTgConn idle(fake->baseUrl());  // a connection that never sends anything
  auto start = std::chrono::steady_clock::now();
  fake.reset();
  CHECK(std::chrono::steady_clock::now() - start < 2s);
}

}  // namespace pine::telegram::test
