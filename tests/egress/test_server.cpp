#include "tests/egress/test_server.h"
#include "common/cloexec.h"
#include "common/send_no_signal.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string_view>

namespace pine::egress::test {
namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    char buf[256];
    ERR_error_string_n(ERR_get_error(), buf, sizeof buf);
    throw std::runtime_error(std::string(what) + ": " + buf);
  }
}

void addExt(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  check(ext != nullptr, "X509V3_EXT_conf_nid");
  check(X509_add_ext(cert, ext, -1) == 1, "X509_add_ext");
  X509_EXTENSION_free(ext);
}

Cert newCert(EVP_PKEY* key, const std::string& cn, long serial) {
  Cert cert(X509_new());
  check(cert != nullptr, "X509_new");
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 24 * 3600);
  check(X509_set_pubkey(cert.get(), key) == 1, "X509_set_pubkey");
  X509_NAME_add_entry_by_txt(X509_get_subject_name(cert.get()), "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  return cert;
}

class Conn {
 public:
  Conn(int fd, SSL* ssl, const std::atomic<bool>& stop) : fd_(fd), ssl_(ssl), stop_(stop) {}
  // Waits for data while the server runs; 0 at end of stream or on stop.
  long read(char* buf, std::size_t n) {
    while (!(ssl_ != nullptr && SSL_pending(ssl_) > 0)) {
      if (stop_) return 0;
      pollfd p{fd_, POLLIN, 0};
      const int r = poll(&p, 1, 50);
      if (r > 0) break;
      if (r < 0) return 0;
    }
    if (ssl_ != nullptr) {
      const int r = SSL_read(ssl_, buf, static_cast<int>(n));
      return r > 0 ? r : 0;
    }
    const ssize_t r = ::recv(fd_, buf, n, 0);
    return r > 0 ? r : 0;
  }
  bool write(std::string_view data) {
    while (!data.empty()) {
      long w = ssl_ != nullptr ? SSL_write(ssl_, data.data(), static_cast<int>(data.size()))
                               : pine::sendNoSignal(fd_, data.data(), data.size(), 0);
      if (w <= 0) return false;
      data.remove_prefix(static_cast<std::size_t>(w));
    }
    return true;
  }

 private:
  int fd_;
  SSL* ssl_;
  const std::atomic<bool>& stop_;
};

std::string queryValue(std::string_view target, std::string_view key) {
  const std::size_t q = target.find('?');
  if (q == std::string_view::npos) return {};
  std::string_view query = target.substr(q + 1);
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    if (pair.starts_with(key) && pair.size() > key.size() && pair[key.size()] == '=') {
      return std::string(pair.substr(key.size() + 1));
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return {};
}

std::string headerValue(std::string_view head, std::string_view name) {
  std::size_t pos = 0;
  while ((pos = head.find("\r\n", pos)) != std::string_view::npos) {
    pos += 2;
    const std::size_t end = head.find("\r\n", pos);
    const std::string_view line = head.substr(pos, end - pos);
    if (line.size() > name.size() && line[name.size()] == ':' &&
        strncasecmp(line.data(), name.data(), name.size()) == 0) {
      std::string_view v = line.substr(name.size() + 1);
      while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
      return std::string(v);
    }
  }
  return {};
}

}  // namespace

Identity makeCa(const std::string& commonName) {
  Key key(EVP_EC_gen("P-256"));
  check(key != nullptr, "EVP_EC_gen");
  Cert cert = newCert(key.get(), commonName, 1);
  X509_set_issuer_name(cert.get(), X509_get_subject_name(cert.get()));
  addExt(cert.get(), cert.get(), NID_basic_constraints, "critical,CA:TRUE");
  addExt(cert.get(), cert.get(), NID_key_usage, "critical,keyCertSign,cRLSign");
  addExt(cert.get(), cert.get(), NID_subject_key_identifier, "hash");
  check(X509_sign(cert.get(), key.get(), EVP_sha256()) > 0, "X509_sign");
  return {std::move(key), std::move(cert)};
}

Identity makeServerCert(const Identity& ca) {
  Key key(EVP_EC_gen("P-256"));
  check(key != nullptr, "EVP_EC_gen");
  Cert cert = newCert(key.get(), "localhost", 2);
  X509_set_issuer_name(cert.get(), X509_get_subject_name(ca.cert.get()));
  addExt(cert.get(), ca.cert.get(), NID_basic_constraints, "critical,CA:FALSE");
  addExt(cert.get(), ca.cert.get(), NID_key_usage, "critical,digitalSignature");
  addExt(cert.get(), ca.cert.get(), NID_ext_key_usage, "serverAuth");
  addExt(cert.get(), ca.cert.get(), NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1");
  addExt(cert.get(), ca.cert.get(), NID_authority_key_identifier, "keyid:always");
  check(X509_sign(cert.get(), ca.key.get(), EVP_sha256()) > 0, "X509_sign");
  return {std::move(key), std::move(cert)};
}

void writePem(const std::string& path, X509* cert) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) throw std::runtime_error("cannot write " + path);
  const int ok = PEM_write_X509(f, cert);
  std::fclose(f);
  check(ok == 1, "PEM_write_X509");
}

void writeKeyPem(const std::string& path, EVP_PKEY* key) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) throw std::runtime_error("cannot write " + path);
  const int ok = PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr);
  std::fclose(f);
  check(ok == 1, "PEM_write_PrivateKey");
}

TestServer::TestServer(const Identity* identity, const std::string& bindAddress, bool silent) : silent_(silent) {
  if (identity != nullptr) {
    ctx_ = SSL_CTX_new(TLS_server_method());
    check(ctx_ != nullptr, "SSL_CTX_new");
    check(SSL_CTX_use_certificate(ctx_, identity->cert.get()) == 1, "SSL_CTX_use_certificate");
    check(SSL_CTX_use_PrivateKey(ctx_, identity->key.get()) == 1, "SSL_CTX_use_PrivateKey");
  }
  listenFd_ = pine::socketCloexec(AF_INET, SOCK_STREAM, 0);
  if (listenFd_ < 0) throw std::runtime_error("socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  inet_pton(AF_INET, bindAddress.c_str(), &addr.sin_addr);
  if (::bind(listenFd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listenFd_, 16) != 0) {
    throw std::runtime_error("bind/listen on " + bindAddress);
  }
  socklen_t len = sizeof addr;
  getsockname(listenFd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { acceptLoop(); });
}

TestServer::~TestServer() {
  stop_ = true;
  acceptor_.join();
  std::vector<std::thread> handlers;
  {
    std::lock_guard lock(mu_);
    handlers.swap(handlers_);
  }
  for (std::thread& t : handlers) t.join();
  ::close(listenFd_);
  if (ctx_ != nullptr) SSL_CTX_free(ctx_);
}

void TestServer::setBomb(Bomb bomb) {
  std::lock_guard lock(mu_);
  bomb_ = std::move(bomb);
}

std::vector<std::string> TestServer::requests() const {
  std::lock_guard lock(mu_);
  return requests_;
}

void TestServer::acceptLoop() {
  while (!stop_) {
    pollfd p{listenFd_, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    const int fd = pine::acceptCloexec(listenFd_);
    if (fd < 0) continue;
    std::lock_guard lock(mu_);
    handlers_.emplace_back([this, fd] { serve(fd); });
  }
}

void TestServer::serve(int fd) {
  if (silent_) {
    while (!stop_) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ::close(fd);
    return;
  }
  SSL* ssl = nullptr;
  if (ctx_ != nullptr) {
    ssl = SSL_new(ctx_);
    SSL_set_fd(ssl, fd);
    timeval tv{2, 0};  // a client that gives up mid-handshake must not hold the test
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (SSL_accept(ssl) != 1) {
      SSL_free(ssl);
      ::close(fd);
      return;
    }
  }
  Conn conn(fd, ssl, stop_);
  std::string req;
  char buf[4096];
  std::size_t headEnd = std::string::npos;
  while (headEnd == std::string::npos) {
    const long n = conn.read(buf, sizeof buf);
    if (n <= 0) break;
    req.append(buf, static_cast<std::size_t>(n));
    headEnd = req.find("\r\n\r\n");
  }
  if (headEnd != std::string::npos) {
    const std::string head = req.substr(0, headEnd + 2);
    const std::string cl = headerValue(head, "Content-Length");
    const std::size_t bodyLen = cl.empty() ? 0 : std::stoul(cl);
    while (req.size() < headEnd + 4 + bodyLen) {
      const long n = conn.read(buf, sizeof buf);
      if (n <= 0) break;
      req.append(buf, static_cast<std::size_t>(n));
    }
    {
      std::lock_guard lock(mu_);
      requests_.push_back(req);
    }
    const std::size_t sp1 = head.find(' ');
    const std::string target = head.substr(sp1 + 1, head.find(' ', sp1 + 1) - sp1 - 1);
    const std::string path = target.substr(0, target.find('?'));
    auto fixed = [&](std::string_view status, std::string_view extra, std::string_view body) {
      conn.write(std::string("HTTP/1.1 ") + std::string(status) + "\r\nContent-Length: " +
                 std::to_string(body.size()) + "\r\nConnection: close\r\n" + std::string(extra) + "\r\n");
      conn.write(body);
    };
    if (path == "/echo") {
      fixed("200 OK", "Content-Type: text/plain\r\n", req);
    } else if (path == "/chunked-echo") {
      conn.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
      constexpr std::size_t kPiece = 3;  // every secret of 8+ bytes is cut at least twice
      for (std::size_t i = 0; i < req.size(); i += kPiece) {
        const std::string piece = req.substr(i, kPiece);
        char size[16];
        std::snprintf(size, sizeof size, "%zx\r\n", piece.size());
        conn.write(std::string(size) + piece + "\r\n");
        std::this_thread::sleep_for(std::chrono::microseconds(300));
      }
      conn.write("0\r\n\r\n");
    } else if (path == "/body-echo") {  // the request's body back, as ?type= says (none: no Content-Type)
      const std::string type = queryValue(target, "type");
      fixed("200 OK", type.empty() ? "" : "Content-Type: " + type + "\r\n", req.substr(headEnd + 4));
    } else if (path == "/header-echo") {
      fixed("200 OK", "X-Echo: " + headerValue(head, "Authorization") + "\r\n", "ok\n");
    } else if (path == "/big" || path == "/big-chunked") {
      const std::size_t n = std::stoul(queryValue(target, "n"));
      std::string body(n, 'a');  // lines of 64 bytes, so the redactor can release them as they come
      for (std::size_t i = 63; i < n; i += 64) body[i] = '\n';
      if (path == "/big") {
        fixed("200 OK", "", body);
      } else {
        conn.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
        for (std::size_t i = 0; i < n; i += 8192) {
          const std::string piece = body.substr(i, 8192);
          char size[16];
          std::snprintf(size, sizeof size, "%zx\r\n", piece.size());
          if (!conn.write(std::string(size) + piece + "\r\n")) break;
        }
        conn.write("0\r\n\r\n");
      }
    } else if (path == "/redirect") {
      fixed("302 Found", "Location: /echo\r\n", "moved\n");
    } else if (path == "/drip") {
      // n one-byte chunks, `gap` ms apart: a slow stream that is never idle for longer than gap.
      conn.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
      const std::size_t n = std::stoul(queryValue(target, "n")), gap = std::stoul(queryValue(target, "gap"));
      for (std::size_t i = 0; i < n; ++i) {
        if (!conn.write("1\r\nx\r\n")) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(gap));
      }
      conn.write("0\r\n\r\n");
    } else if (path == "/bad-status") {
      conn.write("HTTP/1.1 two hundred OK\r\nContent-Length: 2\r\n\r\nok");
    } else if (path == "/bad-header") {
      conn.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nthis line has no colon\r\n\r\nok");
    } else if (path == "/huge-header") {
      const std::size_t n = std::stoul(queryValue(target, "n"));
      conn.write("HTTP/1.1 200 OK\r\nX-Huge: " + std::string(n, 'h') + "\r\nContent-Length: 2\r\n\r\nok");
    } else if (path == "/many-headers") {
      const std::size_t n = std::stoul(queryValue(target, "n"));
      std::string head = "HTTP/1.1 200 OK\r\n";
      for (std::size_t i = 0; i < n; ++i) head += "X-Many-" + std::to_string(i) + ": " + std::string(1000, 'm') + "\r\n";
      conn.write(head + "Content-Length: 2\r\n\r\nok");
    } else if (path == "/cut") {
      const std::size_t n = std::stoul(queryValue(target, "n"));
      conn.write("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(2 * n) + "\r\n\r\n" + std::string(n, 'c'));
    } else if (path == "/cut-chunked") {
      conn.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n400\r\nonly a few bytes of 1024");
    } else if (path == "/bomb") {
      Bomb bomb;
      {
        std::lock_guard lock(mu_);
        bomb = bomb_;
      }
      bombSent_ = 0;
      std::size_t sent = 0;
      bool ok = conn.write("HTTP/1.1 200 OK\r\nContent-Encoding: " + bomb.encoding + "\r\nContent-Length: " +
                           std::to_string(bomb.encodedSize()) + "\r\n\r\n") &&
                conn.write(bomb.head);
      if (ok) sent += bomb.head.size();
      for (std::size_t i = 0; ok && i < bomb.repeats; ++i) {
        ok = conn.write(bomb.segment);
        if (ok) sent += bomb.segment.size();
      }
      if (ok && conn.write(bomb.tail)) sent += bomb.tail.size();
      bombSent_ = sent;
    } else if (path == "/hang") {
      while (conn.read(buf, sizeof buf) > 0) {
      }
    } else {
      fixed("404 Not Found", "", "not found\n");
    }
  }
  if (ssl != nullptr) {
    SSL_shutdown(ssl);
    SSL_free(ssl);
  }
  ::close(fd);
}

}  // namespace pine::egress::test
