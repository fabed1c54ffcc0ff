#include "mcp_remote/http.h"

#include <curl/curl.h>
#include <netdb.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>

#include "common/cloexec.h"

namespace pine::mcp_remote {
namespace {

using egress::AddressKind;

struct Url {
  CURLU* h = curl_url();
  Url() = default;
  Url(const Url&) = delete;
  Url& operator=(const Url&) = delete;
  ~Url() { curl_url_cleanup(h); }
  std::string get(CURLUPart part, unsigned flags = 0) const {
    char* s = nullptr;
    if (h == nullptr || curl_url_get(h, part, &s, flags) != CURLUE_OK || s == nullptr) return "";
    std::string out(s);
    curl_free(s);
    return out;
  }
};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool sameAddress(const sockaddr* a, const sockaddr_storage& b) {
  if (a->sa_family != b.ss_family) return false;
  return egress::addressText(a) == egress::addressText(reinterpret_cast<const sockaddr*>(&b));
}

struct Transfer {
  const Target* target = nullptr;
  const Exchange* x = nullptr;
  CURL* curl = nullptr;
  long status = 0;
  std::string contentType, sessionId;
  bool headDone = false, stopped = false;
  std::string error;
};

size_t onHeader(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string_view line(data, size * n);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  if (line.substr(0, 5) == "HTTP/") {  // a new head (after a 100 Continue too)
    t->contentType.clear();
    t->sessionId.clear();
    return size * n;
  }
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return size * n;
  std::string name = lower(std::string(line.substr(0, colon)));
  std::string_view value = line.substr(colon + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  if (name == "content-type") t->contentType = lower(std::string(value.substr(0, value.find(';'))));
  if (name == "mcp-session-id") t->sessionId = std::string(value);
  return size * n;
}

size_t onBody(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  if (!t->headDone) {
    t->headDone = true;
    curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &t->status);
    if (t->x->onHead) t->x->onHead(t->status, t->contentType, t->sessionId);
  }
  if (t->x->onBody && !t->x->onBody(std::string_view(data, size * n))) {
    t->stopped = true;
    return 0;  // ends the transfer
  }
  return size * n;
}

// Only the checked addresses get a socket: curl's own resolver cannot redirect the connection.
curl_socket_t onOpenSocket(void* user, curlsocktype purpose, curl_sockaddr* addr) {
  auto* t = static_cast<Transfer*>(user);
  const auto* sa = reinterpret_cast<const sockaddr*>(&addr->addr);
  const auto& ok = t->target->addrs;
  bool listed = std::any_of(ok.begin(), ok.end(), [&](const sockaddr_storage& a) { return sameAddress(sa, a); });
  if (purpose != CURLSOCKTYPE_IPCXN || !listed || egress::refusal(sa, t->target->rules)) {
    if (t->error.empty()) t->error = "refused to connect to " + egress::addressText(sa) + ": not the checked address";
    return CURL_SOCKET_BAD;
  }
  int fd = socketCloexec(addr->family, addr->socktype, addr->protocol);
  return fd < 0 ? CURL_SOCKET_BAD : fd;
}

struct CurlFree {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

}  // namespace

std::optional<std::string> resolveTarget(const std::string& url, long timeoutMs, Target& t) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  Url u;
  if (u.h == nullptr || curl_url_set(u.h, CURLUPART_URL, url.c_str(), 0) != CURLUE_OK)
    return "url " + url + " is not a valid URL";
  t.url = url;
  t.scheme = lower(u.get(CURLUPART_SCHEME));
  t.host = lower(u.get(CURLUPART_HOST));
  t.port = u.get(CURLUPART_PORT, CURLU_DEFAULT_PORT);
  if (t.scheme != "https" && t.scheme != "http") return "url " + url + ": only https (and http to a local address)";
  if (!u.get(CURLUPART_USER).empty() || !u.get(CURLUPART_PASSWORD).empty())
    return "url " + url + ": a login in the URL is refused (put it in headers, as ${secret:NAME})";
  if (t.host.empty()) return "url " + url + " has no host";
  if (!u.get(CURLUPART_ZONEID).empty()) return "url " + url + ": IPv6 zone ids are refused";
  const bool v6 = t.host.size() > 2 && t.host.front() == '[';
  const std::string bare = v6 ? t.host.substr(1, t.host.size() - 2) : t.host;

  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* numeric = nullptr;
  hints.ai_flags = AI_NUMERICHOST;
  const bool literal = getaddrinfo(bare.c_str(), nullptr, &hints, &numeric) == 0;
  if (numeric) freeaddrinfo(numeric);
  hints.ai_flags = 0;
  (void)timeoutMs;  // the resolver's own timeouts (resolv.conf) bound the lookup
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(bare.c_str(), nullptr, &hints, &res); rc != 0)
    return "cannot resolve " + bare + ": " + gai_strerror(rc);
  t.addrs.clear();
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6) continue;
    sockaddr_storage ss{};
    std::memcpy(&ss, ai->ai_addr, std::min<size_t>(ai->ai_addrlen, sizeof ss));
    t.addrs.push_back(ss);
  }
  freeaddrinfo(res);
  if (t.addrs.empty()) return "cannot resolve " + bare + ": no IPv4 or IPv6 address";

  // The owner's choice: an address written as such (or localhost) may be local; a name that
  // resolves to a local address is what DNS rebinding looks like.
  const bool local = literal || bare == "localhost";
  t.rules = {local, local};
  bool allLocal = true;
  std::string pinned;
  for (const auto& ss : t.addrs) {
    const auto* sa = reinterpret_cast<const sockaddr*>(&ss);
    if (auto why = egress::refusal(sa, t.rules))
      return literal ? *why
                     : "host " + bare + " resolves to " + *why +
                           " (a name must resolve to public addresses; for a server on this machine or your "
                           "network write its address in url)";
    allLocal = allLocal && egress::classify(sa) != AddressKind::Public;
    std::string text = egress::addressText(sa);
    if (!pinned.empty()) pinned += ',';
    pinned += ss.ss_family == AF_INET6 ? "[" + text + "]" : text;
  }
  if (t.scheme == "http" && !allLocal)
    return "url " + url + ": plain http only to this machine or the local network; use https";
  t.resolveEntry = literal ? "" : bare + ":" + t.port + ":" + pinned;
  return std::nullopt;
}

std::optional<std::string> sameOrigin(const Target& t, const std::string& ref, std::string& absolute) {
  Url u;
  if (u.h == nullptr || curl_url_set(u.h, CURLUPART_URL, t.url.c_str(), 0) != CURLUE_OK ||
      curl_url_set(u.h, CURLUPART_URL, ref.c_str(), 0) != CURLUE_OK)
    return "the address '" + ref.substr(0, 200) + "' is not a URL";
  if (lower(u.get(CURLUPART_SCHEME)) != t.scheme || lower(u.get(CURLUPART_HOST)) != t.host ||
      u.get(CURLUPART_PORT, CURLU_DEFAULT_PORT) != t.port || !u.get(CURLUPART_USER).empty())
    return "the server named another origin to post to (" + ref.substr(0, 200) + "), refused";
  absolute = u.get(CURLUPART_URL);
  return std::nullopt;
}

Outcome perform(const Target& t, const Exchange& x) {
  Outcome out;
  std::unique_ptr<CURL, CurlFree> curl(curl_easy_init());
  if (!curl) return {0, false, "cannot create a curl handle"};
  CURL* c = curl.get();
  Transfer tr;
  tr.target = &t;
  tr.x = &x;
  tr.curl = c;
  std::unique_ptr<curl_slist, CurlFree> headers, resolve;
  for (const auto& h : x.headers) {
    curl_slist* next = curl_slist_append(headers.get(), h.c_str());
    if (!next) return {0, false, "out of memory"};
    headers.release();
    headers.reset(next);
  }
  if (!t.resolveEntry.empty()) resolve.reset(curl_slist_append(nullptr, t.resolveEntry.c_str()));
  char errbuf[CURL_ERROR_SIZE] = {};
  bool ok = true;
  auto set = [&](CURLoption opt, auto value) { ok = ok && curl_easy_setopt(c, opt, value) == CURLE_OK; };
  set(CURLOPT_ERRORBUFFER, errbuf);
  set(CURLOPT_NOSIGNAL, 1L);
  set(CURLOPT_URL, x.url.c_str());
  set(CURLOPT_PROTOCOLS_STR, t.scheme == "http" ? "http" : "https");
  set(CURLOPT_FOLLOWLOCATION, 0L);  // a redirect is an answer, never followed
  set(CURLOPT_NETRC, static_cast<long>(CURL_NETRC_IGNORED));
  set(CURLOPT_PROXY, "");
  set(CURLOPT_NOPROXY, "*");
  set(CURLOPT_SSL_VERIFYPEER, 1L);
  set(CURLOPT_SSL_VERIFYHOST, 2L);
  set(CURLOPT_SSLVERSION, static_cast<long>(CURL_SSLVERSION_TLSv1_2));
  set(CURLOPT_CONNECTTIMEOUT_MS, x.connectTimeoutMs);
  if (x.totalTimeoutMs > 0) set(CURLOPT_TIMEOUT_MS, x.totalTimeoutMs);
  set(CURLOPT_ACCEPT_ENCODING, "");  // decoded here, so the caps count plain bytes
  set(CURLOPT_OPENSOCKETFUNCTION, &onOpenSocket);
  set(CURLOPT_OPENSOCKETDATA, &tr);
  set(CURLOPT_HEADERFUNCTION, &onHeader);
  set(CURLOPT_HEADERDATA, &tr);
  set(CURLOPT_WRITEFUNCTION, &onBody);
  set(CURLOPT_WRITEDATA, &tr);
  if (resolve) set(CURLOPT_RESOLVE, resolve.get());
  if (headers) set(CURLOPT_HTTPHEADER, headers.get());
  if (x.method == "GET") {
    set(CURLOPT_HTTPGET, 1L);
  } else {
    set(CURLOPT_POSTFIELDS, x.body.c_str());
    set(CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(x.body.size()));
    if (x.method != "POST") set(CURLOPT_CUSTOMREQUEST, x.method.c_str());
  }
  if (!ok) return {0, false, "cannot set up the request"};
  CURLcode rc = curl_easy_perform(c);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out.status);
  if (!tr.headDone) {
    tr.headDone = true;
    if (x.onHead && rc == CURLE_OK) x.onHead(out.status, tr.contentType, tr.sessionId);
  }
  out.stopped = tr.stopped;
  if (rc != CURLE_OK && !tr.stopped)
    out.error = !tr.error.empty() ? tr.error : std::string(curl_easy_strerror(rc)) + (errbuf[0] ? std::string(" (") + errbuf + ")" : "");
  return out;
}

}  // namespace pine::mcp_remote
