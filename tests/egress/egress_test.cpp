// Egress against local servers only (127.0.0.0/8): secrets filled in and redacted,
// address, scheme and TLS checks, size cap, no redirects, timeouts.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "egress/egress.h"
#include "tests/egress/test_server.h"

using namespace pine::egress;
using pine::egress::test::Identity;
using pine::egress::test::TestServer;
namespace fs = std::filesystem;

namespace {

const std::string kApiKey = "sk-live-4f8a2c91d7e3b605";      // header value
const std::string kQueryKey = "q9Zx+W/7k=tL&e3R";             // query: needs encoding
const std::string kPassword = "hunter2-correct-horse-battery";
const std::string kKnownOnly = "KNOWNVALUE-5c1e77a0f2";       // known to the redactor, never used

struct Secrets : SecretLookup {
  std::map<std::string, std::string, std::less<>> values{
      {"API_KEY", kApiKey}, {"QUERY_KEY", kQueryKey}, {"PASSWORD", kPassword},
      {"SHORT", "abc12"}, {"CRLF", "line-one\r\nX-Injected: yes"}};
  mutable int lookups = 0;
  std::optional<std::string> get(std::string_view name) const override {
    ++lookups;
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  }
};

struct Env {
  fs::path dir;
  Identity ca, server, rogueCa, rogueServer;
  std::string caFile;
  Env() {
    std::signal(SIGPIPE, SIG_IGN);
    char tmpl[] = "/tmp/pine-egress-test-XXXXXX";
    dir = mkdtemp(tmpl);
    ca = test::makeCa("pine test CA");
    server = test::makeServerCert(ca);
    rogueCa = test::makeCa("pine test CA");  // same name, other key: must not be trusted
    rogueServer = test::makeServerCert(rogueCa);
    caFile = (dir / "ca.pem").string();
    test::writePem(caFile, ca.cert.get());
  }
  ~Env() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

Env& env() {
  static Env e;
  return e;
}

EgressPolicy loopbackPolicy() {
  EgressPolicy p;
  p.allowLoopback = true;
  p.caFile = env().caFile;
  p.connectTimeoutMs = 3000;
  p.totalTimeoutMs = 10000;
  return p;
}

const pine::redact::Redactor& knownRedactor() {
  static const pine::redact::Redactor r({kKnownOnly});
  return r;
}

struct Result {
  std::optional<std::string> error;
  std::optional<EgressResponseHead> head;
  std::string body;
  std::vector<std::string> chunks;
  bool headBeforeChunks = true;
  double seconds = 0;
};

Result run(const EgressRequest& req, const EgressPolicy& policy, const Secrets& secrets = Secrets(),
           std::function<bool(std::string_view)> extra = {}) {
  Result r;
  const auto t0 = std::chrono::steady_clock::now();
  int heads = 0;
  r.error = perform(
      req, policy, secrets, knownRedactor(),
      [&](const EgressResponseHead& h) {
        ++heads;
        r.head = h;
      },
      [&](std::string_view chunk) {
        if (!r.head) r.headBeforeChunks = false;
        r.chunks.emplace_back(chunk);
        r.body.append(chunk);
        return extra ? extra(chunk) : true;
      });
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(heads <= 1);
  return r;
}

std::string base(const TestServer& s, const std::string& host = "127.0.0.1", const std::string& scheme = "https") {
  return scheme + "://" + host + ":" + std::to_string(s.port());
}

bool containsAnySecret(std::string_view text) {
  for (const std::string& v : {kApiKey, kQueryKey, kPassword, kKnownOnly, std::string("q9Zx%2BW/7k%3DtL%26e3R")}) {
    if (text.find(v) != std::string_view::npos) return true;
  }
  return false;
}

std::string headerOf(const EgressResponseHead& h, const std::string& name) {
  for (const auto& [k, v] : h.headers) {
    if (strcasecmp(k.c_str(), name.c_str()) == 0) return v;
  }
  return {};
}

// Everything written to fd 1 and 2 while f runs.
template <class F>
std::string captureOutput(F&& f) {
  const std::string path = (env().dir / "captured.txt").string();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  REQUIRE(fd >= 0);
  fflush(stdout);
  fflush(stderr);
  const int saved1 = ::dup(1), saved2 = ::dup(2);
  ::dup2(fd, 1);
  ::dup2(fd, 2);
  f();
  fflush(stdout);
  fflush(stderr);
  ::dup2(saved1, 1);
  ::dup2(saved2, 2);
  ::close(saved1);
  ::close(saved2);
  ::close(fd);
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("secrets are filled into a header, the query and userinfo, and redacted from what comes back") {
  TestServer server(&env().server);
  EgressRequest req;
  req.method = "POST";
  req.url = base(server) + "/echo?key=${secret:QUERY_KEY}&other=1";
  req.headers = {{"Authorization", "Bearer ${secret:API_KEY}"}, {"X-Plain", "hello"}};
  req.body = "{\"note\":\"" + kKnownOnly + "\"}";  // a value only the redactor knows, echoed back
  const Result r = run(req, loopbackPolicy());
  REQUIRE_MESSAGE(!r.error, r.error.value_or(""));
  REQUIRE(r.head);
  CHECK(r.head->status == 200);
  CHECK(r.headBeforeChunks);

  const auto got = server.requests();
  REQUIRE(got.size() == 1);
  CHECK(got[0].find("Authorization: Bearer " + kApiKey + "\r\n") != std::string::npos);
  // Percent-encoded so '+', '/', '=', '&' cannot change the query's structure.
  CHECK(got[0].find("POST /echo?key=q9Zx%2BW/7k%3DtL%26e3R&other=1 HTTP/1.1") != std::string::npos);
  CHECK(got[0].find("X-Plain: hello") != std::string::npos);
  CHECK(got[0].find(kKnownOnly) != std::string::npos);

  CHECK_FALSE(containsAnySecret(r.body));
  CHECK(r.body.find("Authorization: Bearer [redacted]") != std::string::npos);
  CHECK(r.body.find("POST /echo?key=[redacted]&other=1") != std::string::npos);
  CHECK(r.body.find("\"note\":\"[redacted]\"") != std::string::npos);
  CHECK(r.body.find("X-Plain: hello") != std::string::npos);

  SUBCASE("userinfo becomes Basic auth; its base64 echo is redacted") {
    EgressRequest u;
    u.url = "https://pine:${secret:PASSWORD}@127.0.0.1:" + std::to_string(server.port()) + "/echo";
    const Result ru = run(u, loopbackPolicy());
    REQUIRE_MESSAGE(!ru.error, ru.error.value_or(""));
    const std::string last = server.requests().back();
    CHECK(last.find("Authorization: Basic ") != std::string::npos);
    CHECK(ru.body.find("Authorization: Basic ") != std::string::npos);
    CHECK(ru.body.find("[redacted]") != std::string::npos);
    CHECK_FALSE(containsAnySecret(ru.body));
    // The base64 of "pine:<password>" the server saw does not come back.
    const std::size_t at = last.find("Authorization: Basic ") + 21;
    const std::string b64 = last.substr(at, last.find("\r\n", at) - at);
    CHECK(ru.body.find(b64) == std::string::npos);
  }
}

TEST_CASE("a JSON body is redacted as its reader decodes it: a value written with escapes is found") {
  TestServer server(&env().server);
  // "\u004b\u004e..." for each byte: what a JSON reader of the body (an event's reader, a model)
  // turns back into the value.
  std::string escaped;
  for (unsigned char c : kKnownOnly) {
    char u[8];
    std::snprintf(u, sizeof u, "\\u%04x", c);
    escaped += u;
  }
  for (const char* type : {"application/json", "text/plain", ""}) {
    CAPTURE(type);
    EgressRequest req;
    req.method = "POST";
    req.url = base(server) + "/body-echo?type=" + type;
    req.body = "{\"note\": \"" + escaped + "\", \"n\": 1}";
    const Result r = run(req, loopbackPolicy());
    REQUIRE_MESSAGE(!r.error, r.error.value_or(""));
    auto parsed = nlohmann::json::parse(r.body, nullptr, false);
    REQUIRE_FALSE(parsed.is_discarded());
    CHECK(parsed["note"] == "[redacted]");  // before: the escapes came back as they were
    CHECK(parsed["n"] == 1);
    // The twin: JSON with escapes and no secret comes back byte for byte.
    EgressRequest plain = req;
    plain.body = R"({"a": "caf\u00e9 \/ ok", "n": 1.50})";
    const Result rp = run(plain, loopbackPolicy());
    REQUIRE_MESSAGE(!rp.error, rp.error.value_or(""));
    CHECK(rp.body == plain.body);
  }
  // JSON after whitespace that comes in pieces of its own, and after a byte-order mark, as text/plain.
  for (const std::string& lead : {std::string(40000, '\n'), std::string("\xef\xbb\xbf")}) {
    EgressRequest req;
    req.method = "POST";
    req.url = base(server) + "/body-echo?type=text/plain";
    req.body = lead + "{\"note\": \"" + escaped + "\"}";
    const Result r = run(req, loopbackPolicy());
    REQUIRE_MESSAGE(!r.error, r.error.value_or(""));
    CHECK(r.body.find(escaped) == std::string::npos);  // before: read as plain text from its first piece
    CHECK(r.body.find("[redacted]") != std::string::npos);
  }
}

TEST_CASE("a secret split across many small chunks is still redacted") {
  TestServer server(&env().server);
  EgressRequest req;
  req.method = "PUT";
  req.url = base(server) + "/chunked-echo?k=${secret:QUERY_KEY}";
  req.headers = {{"Authorization", "Bearer ${secret:API_KEY}"}, {"X-Key", "${secret:PASSWORD}"}};
  req.body = "known=" + kKnownOnly + " and no newline at the end";
  const Result r = run(req, loopbackPolicy());
  REQUIRE_MESSAGE(!r.error, r.error.value_or(""));
  CHECK(r.head->status == 200);
  CHECK(server.requests().at(0).find(kPassword) != std::string::npos);
  CHECK_FALSE(containsAnySecret(r.body));
  CHECK(r.body.find("Authorization: Bearer [redacted]\r\n") != std::string::npos);
  CHECK(r.body.find("X-Key: [redacted]\r\n") != std::string::npos);
  CHECK(r.body.find("known=[redacted] and no newline at the end") != std::string::npos);
  CHECK(r.chunks.size() > 1);  // streamed, not collected into one piece
  for (const std::string& c : r.chunks) CHECK_FALSE(containsAnySecret(c));
}

TEST_CASE("response headers are redacted") {
  TestServer server(&env().server);
  EgressRequest req;
  req.url = base(server) + "/header-echo";
  req.headers = {{"Authorization", "Bearer ${secret:API_KEY}"}};
  const Result r = run(req, loopbackPolicy());
  REQUIRE_MESSAGE(!r.error, r.error.value_or(""));
  CHECK(headerOf(*r.head, "X-Echo") == "Bearer [redacted]");
  CHECK(headerOf(*r.head, "Content-Length") == "3");
  for (const auto& [k, v] : r.head->headers) CHECK_FALSE(containsAnySecret(k + v));
}

TEST_CASE("an unknown secret is named in the error, and nothing is sent") {
  TestServer server(&env().server);
  EgressRequest req;
  req.url = base(server) + "/echo?a=${secret:API_KEY}";
  req.headers = {{"X-Token", "${secret:NO_SUCH_SECRET}"}};
  const Result r = run(req, loopbackPolicy());
  REQUIRE(r.error);
  CHECK(r.error->find("unknown secret NO_SUCH_SECRET") != std::string::npos);
  CHECK_FALSE(containsAnySecret(*r.error));
  CHECK(server.requests().empty());
  CHECK_FALSE(r.head);
}

TEST_CASE("placeholders are refused outside the URL's userinfo, path and query and header values") {
  Secrets secrets;
  auto refused = [&](EgressRequest req, const std::string& expect) {
    const Result r = run(req, loopbackPolicy(), secrets);
    REQUIRE(r.error);
    CHECK_MESSAGE(r.error->find(expect) != std::string::npos, *r.error);
    CHECK_FALSE(containsAnySecret(*r.error));
  };
  EgressRequest req;
  req.url = "https://${secret:API_KEY}.example.com/";
  refused(req, "host part is refused");
  req.url = "https://user@${secret:API_KEY}/x";
  refused(req, "host part is refused");
  req.url = "https://127.0.0.1:${secret:API_KEY}/x";
  refused(req, "host part is refused");
  req.url = "https://a${secret:API_KEY}b/x?y=1";
  refused(req, "host part is refused");
  req.url = "${secret:API_KEY}://127.0.0.1/";
  refused(req, "scheme");
  req.url = "https://127.0.0.1/x";
  req.method = "${secret:API_KEY}";
  refused(req, "method");
  req.method = "POST";
  req.body = "token=${secret:API_KEY}";
  refused(req, "body is refused");
  req.body.clear();
  req.headers = {{"X-${secret:API_KEY}", "v"}};
  refused(req, "header name");
  req.headers = {{"X-Token", "${secret:API KEY}"}};
  refused(req, "malformed secret placeholder");
  req.headers = {{"X-Token", "${secret:API_KEY"}};
  refused(req, "malformed secret placeholder");
  req.headers = {{"X-Token", "${secret:CRLF}"}};
  refused(req, "secret CRLF contains a line break");
  req.headers = {{"X-Token", "${secret:SHORT}"}};
  refused(req, "secret SHORT is shorter than 8 bytes");
  req.headers = {{"X-Evil", "a\r\nX-Injected: 1"}};
  refused(req, "line break");
  req.headers = {{"Host", "example.com"}};
  refused(req, "Host header");
  req.headers = {{"Accept-Encoding", "gzip"}};
  refused(req, "Accept-Encoding");
  // Only the two refusals that come after the templates were checked looked anything up.
  CHECK(secrets.lookups == 2);
}

TEST_CASE("loopback is refused unless allowed, and the check is on the resolved address") {
  TestServer server(&env().server);
  EgressPolicy policy = loopbackPolicy();
  policy.allowLoopback = false;
  for (const std::string& host : {std::string("127.0.0.1"), std::string("localhost"), std::string("[::1]"),
                                  std::string("[::ffff:127.0.0.1]"), std::string("127.1"), std::string("2130706433"),
                                  std::string("0x7f.0.0.1")}) {
    EgressRequest req;
    req.url = base(server, host) + "/echo";
    req.headers = {{"Authorization", "Bearer ${secret:API_KEY}"}};
    const Result r = run(req, policy);
    REQUIRE_MESSAGE(r.error, host);
    CHECK_MESSAGE(r.error->find("loopback") != std::string::npos, *r.error);
    CHECK_FALSE(containsAnySecret(*r.error));
  }
  CHECK(server.requests().empty());

  EgressRequest ok;
  ok.url = base(server, "localhost") + "/echo";  // resolves to ::1 and 127.0.0.1; the server is on the latter
  const Result r = run(ok, loopbackPolicy());
  CHECK_MESSAGE(!r.error, r.error.value_or(""));
  CHECK(server.requests().size() == 1);
}

TEST_CASE("private, link-local and reserved addresses are refused before any connection") {
  EgressPolicy policy = loopbackPolicy();
  for (const char* url : {"https://10.0.0.1/", "https://172.16.3.4/", "https://192.168.1.1/", "https://169.254.169.254/",
                          "https://100.64.1.1/", "https://[fd00::1]/", "https://[fe80::1]/", "https://[::ffff:10.0.0.1]/",
                          "https://[::ffff:a00:1]/", "https://[64:ff9b::a00:1]/"}) {
    EgressRequest req;
    req.url = url;
    const Result r = run(req, policy);
    REQUIRE_MESSAGE(r.error, url);
    CHECK_MESSAGE(r.error->find("private") != std::string::npos, *r.error);
  }
  policy.allowPrivate = true;
  for (const char* url : {"https://0.0.0.0/", "https://[::]/", "https://224.0.0.1/", "https://255.255.255.255/"}) {
    EgressRequest req;
    req.url = url;
    const Result r = run(req, policy);
    REQUIRE_MESSAGE(r.error, url);
    CHECK_MESSAGE(r.error->find("reserved") != std::string::npos, *r.error);
  }
}

TEST_CASE("allowHosts limits the hosts") {
  TestServer server(&env().server);
  EgressPolicy policy = loopbackPolicy();
  EgressRequest req;
  req.url = base(server) + "/echo";
  policy.allowHosts = {"localhost", "*.example.com"};
  Result r = run(req, policy);
  REQUIRE(r.error);
  CHECK(r.error->find("not in allowHosts") != std::string::npos);
  policy.allowHosts = {"127.0.0.1"};
  r = run(req, policy);
  CHECK_MESSAGE(!r.error, r.error.value_or(""));
}

TEST_CASE("TLS: certificates from an untrusted CA and for another name are refused") {
  SUBCASE("a server certificate signed by another CA") {
    TestServer rogue(&env().rogueServer);
    EgressRequest req;
    req.url = base(rogue) + "/echo?k=${secret:QUERY_KEY}";
    req.headers = {{"Authorization", "Bearer ${secret:API_KEY}"}};
    const Result r = run(req, loopbackPolicy());
    REQUIRE(r.error);
    CHECK_MESSAGE(r.error->find("TLS verification failed") != std::string::npos, *r.error);
    CHECK_FALSE(containsAnySecret(*r.error));
    CHECK(rogue.requests().empty());
  }
  SUBCASE("the system store does not know the test CA") {
    TestServer server(&env().server);
    EgressPolicy policy = loopbackPolicy();
    policy.caFile.clear();
    EgressRequest req;
    req.url = base(server) + "/echo";
    const Result r = run(req, policy);
    REQUIRE(r.error);
    CHECK_MESSAGE(r.error->find("TLS verification failed") != std::string::npos, *r.error);
    CHECK(server.requests().empty());
  }
  SUBCASE("a valid certificate for another address") {
    TestServer server(&env().server, "127.0.0.2");  // the certificate names 127.0.0.1 and localhost
    EgressRequest req;
    req.url = base(server, "127.0.0.2") + "/echo";
    const Result r = run(req, loopbackPolicy());
    REQUIRE(r.error);
    CHECK(server.requests().empty());
  }
}

TEST_CASE("plain http is refused unless allowed") {
  TestServer plain(nullptr);
  EgressRequest req;
  req.url = base(plain, "127.0.0.1", "http") + "/echo";
  req.headers = {{"Authorization", "Bearer ${secret:API_KEY}"}};
  EgressPolicy policy = loopbackPolicy();
  Result r = run(req, policy);
  REQUIRE(r.error);
  CHECK(r.error->find("plain http is refused") != std::string::npos);
  CHECK(plain.requests().empty());

  policy.allowPlainHttp = true;
  r = run(req, policy);
  REQUIRE_MESSAGE(!r.error, r.error.value_or(""));
  CHECK(plain.requests().size() == 1);
  CHECK(r.body.find("Authorization: Bearer [redacted]") != std::string::npos);

  for (const char* url : {"ftp://127.0.0.1/x", "file:///etc/passwd", "gopher://127.0.0.1/", "127.0.0.1/echo"}) {
    req.url = url;
    r = run(req, policy);
    REQUIRE_MESSAGE(r.error, url);
  }
  // The FTP methods take ftp and ftps only, and nothing but the URL: no http through them, no headers.
  EgressRequest ftp;
  ftp.method = "FTP-LIST";
  ftp.url = base(plain) + "/echo";
  r = run(ftp, policy);
  REQUIRE(r.error);
  CHECK(r.error->find("ftp and ftps URLs only") != std::string::npos);
  ftp.url = "ftp://127.0.0.1:1/";
  ftp.headers = {{"X-Any", "1"}};
  r = run(ftp, policy);
  REQUIRE(r.error);
  CHECK(r.error->find("no headers and no body") != std::string::npos);
  CHECK(plain.requests().size() == 1);  // none of them reached the server
}

// A listener on loopback that greets each connection with `greeting` and then waits for the
// client to go (for a server that speaks something other than what egress expects).
class RawGreeter {
 public:
  explicit RawGreeter(std::string greeting) : greeting_(std::move(greeting)) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    socklen_t len = sizeof a;
    REQUIRE(getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    port_ = ntohs(a.sin_port);
    REQUIRE(listen(fd_, 4) == 0);
    thread_ = std::thread([this] {
      for (int c; (c = accept(fd_, nullptr, nullptr)) >= 0;) {
        timeval wait{10, 0};  // a client that keeps the connection cannot hold the test forever
        setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
        [[maybe_unused]] auto n = write(c, greeting_.data(), greeting_.size());
        char buf[256];
        while (read(c, buf, sizeof buf) > 0) {
        }
        close(c);
      }
    });
  }
  ~RawGreeter() {
    shutdown(fd_, SHUT_RDWR);  // ends accept()
    thread_.join();
    close(fd_);
  }
  int port() const { return port_; }

 private:
  std::string greeting_;
  int fd_ = -1, port_ = 0;
  std::thread thread_;
};

TEST_CASE("a server that does not speak FTP is named so, and one that does not speak HTTP so") {
  EgressPolicy policy = loopbackPolicy();
  policy.allowPlainHttp = true;
  RawGreeter notFtp("554 this is a mail server\r\n");  // a reply, but not the 220 an FTP server greets with
  EgressRequest list;
  list.method = "FTP-LIST";
  list.url = "ftp://127.0.0.1:" + std::to_string(notFtp.port()) + "/";
  Result r = run(list, policy);
  REQUIRE(r.error);
  CHECK_MESSAGE(r.error->find("the server's answer is not a valid FTP reply") != std::string::npos, *r.error);
  CHECK(r.error->find("HTTP") == std::string::npos);

  RawGreeter notHttp("SSH-2.0-OpenSSH_9.2\r\n");
  EgressRequest get;
  get.url = "http://127.0.0.1:" + std::to_string(notHttp.port()) + "/";
  r = run(get, policy);
  REQUIRE(r.error);
  CHECK_MESSAGE(r.error->find("the server's answer is not valid HTTP") != std::string::npos, *r.error);
}

TEST_CASE("the response size cap") {
  TestServer server(&env().server);
  EgressPolicy policy = loopbackPolicy();
  policy.maxResponseBytes = 50000;
  EgressRequest req;
  for (const char* path : {"/big?n=100000", "/big-chunked?n=100000"}) {
    req.url = base(server) + path;
    const Result r = run(req, policy);
    REQUIRE_MESSAGE(r.error, path);
    CHECK_MESSAGE(r.error->find("response larger than 50000 bytes") != std::string::npos, *r.error);
    CHECK(r.body.size() <= 50000);
  }
  for (const char* path : {"/big?n=50000", "/big-chunked?n=50000"}) {
    req.url = base(server) + path;
    const Result r = run(req, policy);
    REQUIRE_MESSAGE(!r.error, r.error.value_or(""));
    std::string expected(50000, 'a');
    for (std::size_t i = 63; i < expected.size(); i += 64) expected[i] = '\n';
    CHECK(r.body.size() == expected.size());
    CHECK((r.body == expected));  // no dump of 50 kB on failure
    CHECK(r.chunks.size() > 1);
  }
}

TEST_CASE("redirects are returned, not followed") {
  TestServer server(&env().server);
  EgressRequest req;
  req.url = base(server) + "/redirect";
  const Result r = run(req, loopbackPolicy());
  REQUIRE_MESSAGE(!r.error, r.error.value_or(""));
  CHECK(r.head->status == 302);
  CHECK(headerOf(*r.head, "Location") == "/echo");
  CHECK(r.body == "moved\n");
  CHECK(server.requests().size() == 1);
}

TEST_CASE("timeouts: a server that never answers") {
  EgressPolicy policy = loopbackPolicy();
  policy.totalTimeoutMs = 500;
  SUBCASE("no TLS handshake") {
    TestServer silent(&env().server, "127.0.0.1", true);
    EgressRequest req;
    req.url = base(silent) + "/echo";
    const Result r = run(req, policy);
    REQUIRE(r.error);
    CHECK_MESSAGE(r.error->find("timed out") != std::string::npos, *r.error);
    CHECK(r.seconds < 2.0);
  }
  SUBCASE("no response after the request") {
    TestServer server(&env().server);
    EgressRequest req;
    req.url = base(server) + "/hang?k=${secret:QUERY_KEY}";
    req.headers = {{"Authorization", "Bearer ${secret:API_KEY}"}};
    const Result r = run(req, policy);
    REQUIRE(r.error);
    CHECK_MESSAGE(r.error->find("timed out") != std::string::npos, *r.error);
    CHECK_FALSE(containsAnySecret(*r.error));
    CHECK(r.error->find("${secret:QUERY_KEY}") != std::string::npos);  // the template, not the value
    CHECK(r.seconds < 2.0);
  }
}

TEST_CASE("timeouts: the idle limit ends a stalled stream, not a slow one") {
  EgressPolicy policy = loopbackPolicy();
  policy.totalTimeoutMs = 20000;
  policy.idleTimeoutMs = 1000;
  TestServer server(&env().server);
  EgressRequest req;
  // Longer in total than the idle limit, never idle that long: it completes.
  req.url = base(server) + "/drip?n=10&gap=250";
  Result r = run(req, policy);
  REQUIRE_MESSAGE(!r.error, *r.error);
  CHECK(r.body == std::string(10, 'x'));
  CHECK(r.seconds > 2.0);
  // Idle for longer than the limit: it ends long before the total would.
  req.url = base(server) + "/drip?n=3&gap=6000";
  r = run(req, policy);
  REQUIRE(r.error);
  CHECK_MESSAGE(r.error->find("timed out") != std::string::npos, *r.error);
  CHECK(r.seconds < 5.0);
}

TEST_CASE("the receiver can stop the transfer") {
  TestServer server(&env().server);
  EgressRequest req;
  req.url = base(server) + "/big-chunked?n=400000";
  const Result r = run(req, loopbackPolicy(), Secrets(), [](std::string_view) { return false; });
  REQUIRE(r.error);
  CHECK(r.error->find("stopped the transfer") != std::string::npos);
  CHECK(r.chunks.size() == 1);
  CHECK(r.body.size() < 400000);
}

TEST_CASE("proxy variables in the environment are ignored; SSLKEYLOGFILE is refused") {
  TestServer server(&env().server);
  EgressRequest req;
  req.url = base(server) + "/echo";
  ::setenv("https_proxy", "http://127.0.0.1:9", 1);
  ::setenv("HTTPS_PROXY", "http://127.0.0.1:9", 1);
  ::setenv("ALL_PROXY", "http://127.0.0.1:9", 1);
  Result r = run(req, loopbackPolicy());
  ::unsetenv("https_proxy");
  ::unsetenv("HTTPS_PROXY");
  ::unsetenv("ALL_PROXY");
  CHECK_MESSAGE(!r.error, r.error.value_or(""));
  CHECK(server.requests().size() == 1);

  ::setenv("SSLKEYLOGFILE", (env().dir / "keys.log").c_str(), 1);
  r = run(req, loopbackPolicy());
  ::unsetenv("SSLKEYLOGFILE");
  REQUIRE(r.error);
  CHECK(r.error->find("SSLKEYLOGFILE") != std::string::npos);
  CHECK_FALSE(fs::exists(env().dir / "keys.log"));
}

TEST_CASE("a secret used by egress never appears on stdout or stderr, nor in an error") {
  TestServer server(&env().server);
  TestServer rogue(&env().rogueServer);
  std::vector<std::string> errors;
  const std::string out = captureOutput([&] {
    for (const std::string& url : {base(server) + "/echo?k=${secret:QUERY_KEY}", base(server) + "/chunked-echo",
                                   base(rogue) + "/echo?k=${secret:QUERY_KEY}", base(server) + "/nope"}) {
      EgressRequest req;
      req.url = url;
      req.headers = {{"Authorization", "Bearer ${secret:API_KEY}"}, {"X-Pw", "${secret:PASSWORD}"}};
      const Result r = run(req, loopbackPolicy());
      if (r.error) errors.push_back(*r.error);
      CHECK_FALSE(containsAnySecret(r.body));
    }
  });
  CHECK_FALSE(containsAnySecret(out));
  CHECK(out.empty());  // the library writes nothing itself; callers log the (redacted) error texts
  CHECK(errors.size() == 1);
  for (const std::string& e : errors) CHECK_FALSE(containsAnySecret(e));
}
