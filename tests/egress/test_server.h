// A small HTTPS (or plain HTTP) server on loopback for the egress tests, with a test CA
// and certificates made at run time by the OpenSSL API.
#pragma once
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace pine::egress::test {

struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct CertFree {
  void operator()(X509* x) const { X509_free(x); }
};
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;
using Cert = std::unique_ptr<X509, CertFree>;

struct Identity {
  Key key;
  Cert cert;
};

// A self-signed CA, and a server certificate it signs for DNS:localhost and IP:127.0.0.1.
Identity makeCa(const std::string& commonName);
Identity makeServerCert(const Identity& ca);
void writePem(const std::string& path, X509* cert);
void writeKeyPem(const std::string& path, EVP_PKEY* key);  // unencrypted: for a test server in another process

// A body that decodes to far more than it is: `head`, then `segment` `repeats` times, then
// `tail`, sent with Content-Encoding `encoding` (tests/egress/bombs.h makes them).
struct Bomb {
  std::string encoding;  // gzip, deflate, br
  std::string head, segment, tail;
  std::size_t repeats = 0;
  std::size_t decodedBytes = 0;
  std::size_t encodedSize() const { return head.size() + segment.size() * repeats + tail.size(); }
};

// Paths served:
//   /echo            200, the request (line, headers, body) as the body
//   /chunked-echo    the same, chunked, a few bytes per chunk with pauses between them
//   /header-echo     200, the request's Authorization value in an X-Echo header
//   /big?n=N         N bytes in lines of 64, with Content-Length; /big-chunked?n=N without it
//   /redirect        302 to /echo
//   /hang            reads the request, never answers
//   /drip?n=N&gap=MS n one-byte chunks, gap ms apart
// and what a hostile server answers:
//   /bad-status      a status line that is not HTTP
//   /bad-header      a header line without a colon
//   /huge-header?n=N one header line of N bytes
//   /many-headers?n=N  N headers of 1 KiB each
//   /cut?n=N         Content-Length 2N, N bytes, then the connection closes
//   /cut-chunked     a chunk announced and cut short, then the connection closes
//   /bomb            the Bomb set with setBomb(); bombSent() says how much went out before the client left
// silent: accept connections and never read or write (no TLS handshake either).
class TestServer {
 public:
  // identity == nullptr: plain HTTP.
  explicit TestServer(const Identity* identity, const std::string& bindAddress = "127.0.0.1",
                      bool silent = false);
  ~TestServer();
  TestServer(const TestServer&) = delete;
  TestServer& operator=(const TestServer&) = delete;

  int port() const { return port_; }
  // Every request received so far, raw (head and body).
  std::vector<std::string> requests() const;
  void setBomb(Bomb bomb);
  // Encoded bytes of the last /bomb answer written before the client closed (or all of them).
  std::size_t bombSent() const { return bombSent_; }

 private:
  void acceptLoop();
  void serve(int fd);

  SSL_CTX* ctx_ = nullptr;
  int listenFd_ = -1;
  int port_ = 0;
  bool silent_ = false;
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  mutable std::mutex mu_;
  std::vector<std::thread> handlers_;
  std::vector<std::string> requests_;
  Bomb bomb_;
  std::atomic<std::size_t> bombSent_{0};
};

}  // namespace pine::egress::test
