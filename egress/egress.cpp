// Egress: fill in secrets, check where the request goes, make it with libcurl, and
// redact what comes back; in a pine-egress process (job.cpp), never in pined. Order
// matters: the URL and headers are checked as templates (placeholders still in) before
// any secret is looked up, and the host is resolved and checked before a byte is sent;
// curl is then pinned to exactly the checked addresses.
#include "egress/egress.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "egress/address_policy.h"
#include "egress/ftp_options.h"
#include "egress/request/placeholders.h"
#include "common/cloexec.h"

namespace pine::egress {
namespace {

constexpr std::size_t kMaxHeaderBytes = 256 << 10;
// The marker curl sees in place of a placeholder when the template is checked: plain
// letters, valid in every URL part, so curl reports the part it landed in.
constexpr std::string_view kDummy = "pinesecretplaceholder";

using Clock = std::chrono::steady_clock;

void globalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// Owns a CURLU and frees it.
struct UrlHandle {
  CURLU* h = curl_url();
  UrlHandle() = default;
  UrlHandle(const UrlHandle&) = delete;
  UrlHandle& operator=(const UrlHandle&) = delete;
  ~UrlHandle() { curl_url_cleanup(h); }
  std::optional<std::string> get(CURLUPart part, unsigned flags = 0) const {
    char* s = nullptr;
    if (curl_url_get(h, part, &s, flags) != CURLUE_OK || s == nullptr) return std::nullopt;
    std::string out(s);
    curl_free(s);
    return out;
  }
};

struct Resolved {
  std::vector<sockaddr_storage> addrs;
  std::string error;
};

// getaddrinfo has no timeout of its own: it runs on a helper thread that may outlive
// the call (it then frees its result alone).
Resolved resolve(const std::string& host, long timeoutMs) {
  struct State {
    std::mutex m;
    std::condition_variable cv;
    bool done = false;
    int rc = 0;
    std::vector<sockaddr_storage> addrs;
  };
  auto st = std::make_shared<State>();
  try {
    std::thread([st, host] {
      addrinfo hints{};
      hints.ai_family = AF_UNSPEC;
      hints.ai_socktype = SOCK_STREAM;
      addrinfo* res = nullptr;
      const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
      std::vector<sockaddr_storage> addrs;
      for (addrinfo* ai = res; rc == 0 && ai != nullptr; ai = ai->ai_next) {
        if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6) continue;
        sockaddr_storage ss{};
        std::memcpy(&ss, ai->ai_addr, std::min<std::size_t>(ai->ai_addrlen, sizeof ss));
        addrs.push_back(ss);
      }
      if (res != nullptr) freeaddrinfo(res);
      std::lock_guard lock(st->m);
      st->rc = rc;
      st->addrs = std::move(addrs);
      st->done = true;
      st->cv.notify_all();
    }).detach();
  } catch (const std::exception& e) {
    return {{}, std::string("cannot start name resolution: ") + e.what()};
  }
  std::unique_lock lock(st->m);
  if (!st->cv.wait_for(lock, std::chrono::milliseconds(timeoutMs), [&] { return st->done; })) {
    return {{}, "resolving " + host + " timed out after " + std::to_string(timeoutMs) + " ms"};
  }
  if (st->rc != 0) return {{}, "cannot resolve " + host + ": " + gai_strerror(st->rc)};
  if (st->addrs.empty()) return {{}, "cannot resolve " + host + ": no IPv4 or IPv6 address"};
  return {std::move(st->addrs), {}};
}

bool sameAddress(const sockaddr* a, const sockaddr_storage& b) {
  if (a->sa_family != b.ss_family) return false;
  if (a->sa_family == AF_INET) {
    sockaddr_in x, y;
    std::memcpy(&x, a, sizeof x);
    std::memcpy(&y, &b, sizeof y);
    return x.sin_addr.s_addr == y.sin_addr.s_addr;
  }
  if (a->sa_family == AF_INET6) {
    sockaddr_in6 x, y;
    std::memcpy(&x, a, sizeof x);
    std::memcpy(&y, &b, sizeof y);
    return std::memcmp(&x.sin6_addr, &y.sin6_addr, sizeof x.sin6_addr) == 0;
  }
  return false;
}

// Redacts with the values this request used first, then with everything the caller's
// redactor knows (patterns included).
struct Scrubber {
  const redact::Redactor& used;
  const redact::Redactor& known;
  std::string operator()(std::string_view text) const { return known.redact(used.redact(text)); }
};

struct Transfer {
  Transfer(Scrubber s, const redact::Redactor& used, const redact::Redactor& known,
           const std::function<void(const EgressResponseHead&)>& head,
           const std::function<bool(std::string_view)>& chunk)
      : scrub(s), used(used), known(known), onHead(head), onChunk(chunk) {}

  Scrubber scrub;
  const redact::Redactor& used;
  const redact::Redactor& known;
  // Made at the body's first bytes, once its type is known: a JSON body is read with its strings
  // decoded, so that a value written with escapes ("tok\u002d...") is found as the receiver (an
  // event's reader, a model) would read it; any other body as plain text.
  std::optional<redact::FormatStreamRedactor> usedStream, knownStream;
  std::string held;  // the body's first bytes while they are only whitespace (or a byte-order mark)
  const std::function<void(const EgressResponseHead&)>& onHead;
  const std::function<bool(std::string_view)>& onChunk;
  CURL* curl = nullptr;
  const std::vector<sockaddr_storage>* allowed = nullptr;
  AddressRules rules;
  std::size_t maxBytes = 0;
  std::size_t bodyBytes = 0;
  std::size_t headerBytes = 0;
  EgressResponseHead head;
  bool headSent = false;
  std::string error;  // set by a callback that stopped the transfer
  std::exception_ptr thrown;

  void sendHead() {
    if (headSent) return;
    headSent = true;
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    head.status = status;
    if (onHead) onHead(head);
  }

  bool deliver(std::string_view redacted) { return redacted.empty() || !onChunk || onChunk(redacted); }

  // Decides the format once the body's first byte that is not whitespace (or a byte-order mark)
  // has come, or `force` (the body ended, or 64 KiB of whitespace): true once the streams are made.
  bool startStreams(bool force) {
    if (usedStream) return true;
    static constexpr std::string_view kBom = "\xef\xbb\xbf";
    if (!force && held.size() < kBom.size() && kBom.starts_with(held)) return false;  // a mark cut short
    std::size_t at = held.rfind(kBom, 0) == 0 ? kBom.size() : 0;
    at = held.find_first_not_of(" \t\r\n", at);
    if (at == std::string::npos && !force && held.size() < (64 << 10)) return false;
    redact::Format format = redact::Format::kPlain;
    for (const auto& [name, value] : head.headers)
      if (lowerAscii(name) == "content-type") format = redact::formatFor(value);
    // JSON served under another type (text/plain, or none) is still read as JSON by whoever parses it.
    if (format == redact::Format::kPlain && at != std::string::npos && (held[at] == '{' || held[at] == '['))
      format = redact::Format::kJson;
    usedStream.emplace(used, format);
    knownStream.emplace(known, format);
    return true;
  }
};

size_t onHeaderLine(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::size_t len = size * n;
  try {
    t->headerBytes += len;
    if (t->headerBytes > kMaxHeaderBytes) {
      t->error = "response headers larger than " + std::to_string(kMaxHeaderBytes) + " bytes";
      return 0;
    }
    std::string_view line(data, len);
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
    if (line.starts_with("HTTP/")) {
      t->head.headers.clear();  // a new response (after a 1xx) starts its own header list
      return len;
    }
    if (line.empty()) return len;
    const std::string clean = t->scrub(line);
    const std::size_t colon = clean.find(':');
    if (colon == std::string::npos) return len;  // an obsolete folded line: dropped
    std::string_view value = std::string_view(clean).substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    t->head.headers.emplace_back(clean.substr(0, colon), std::string(value));
    return len;
  } catch (...) {
    t->thrown = std::current_exception();
    return 0;
  }
}

size_t onBody(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::size_t len = size * n;
  try {
    t->sendHead();
    if (len > t->maxBytes - std::min(t->maxBytes, t->bodyBytes)) {
      t->error = "response larger than " + std::to_string(t->maxBytes) + " bytes";
      return 0;
    }
    t->bodyBytes += len;
    std::string_view piece(data, len);
    if (!t->usedStream) {
      t->held.append(piece);
      if (!t->startStreams(false)) return len;  // only whitespace so far: the format is not known yet
      piece = t->held;
    }
    const std::string stage = t->usedStream->feed(piece);
    t->held.clear();
    if (!t->deliver(t->knownStream->feed(stage))) {
      t->error = "the receiver stopped the transfer";
      return 0;
    }
    return len;
  } catch (...) {
    t->thrown = std::current_exception();
    return 0;
  }
}

// curl asks for a socket for each address it tries: only the checked ones get one, so
// neither its own resolver nor anything else can redirect the connection.
curl_socket_t onOpenSocket(void* user, curlsocktype purpose, curl_sockaddr* addr) {
  auto* t = static_cast<Transfer*>(user);
  const auto* sa = reinterpret_cast<const sockaddr*>(&addr->addr);
  const bool listed = std::any_of(t->allowed->begin(), t->allowed->end(),
                                  [&](const sockaddr_storage& ok) { return sameAddress(sa, ok); });
  if (purpose != CURLSOCKTYPE_IPCXN || !listed || refusal(sa, t->rules)) {
    if (t->error.empty()) t->error = "refused to connect to " + addressText(sa) + ": not an address that was checked";
    return CURL_SOCKET_BAD;
  }
  // Close-on-exec: the supervisor spawns children, which must not inherit the connection.
  const int fd = socketCloexec(addr->family, addr->socktype, addr->protocol);
  return fd < 0 ? CURL_SOCKET_BAD : fd;
}

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct SlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

bool hostAllowed(const std::string& host, const std::vector<std::string>& allow) {
  if (allow.empty()) return true;
  const std::string h = lowerAscii(host);
  for (const std::string& entry : allow) {
    const std::string e = lowerAscii(entry);
    if (e.starts_with("*.")) {
      const std::string_view suffix = std::string_view(e).substr(1);  // ".example.com"
      if (h.size() > suffix.size() && h.ends_with(suffix)) return true;
    } else if (h == e) {
      return true;
    }
  }
  return false;
}


}  // namespace

void prepare() { globalInit(); }

std::optional<std::string> perform(const EgressRequest& request, const EgressPolicy& policy,
                                   const SecretLookup& secrets, const redact::Redactor& redactor,
                                   const std::function<void(const EgressResponseHead&)>& onHead,
                                   const std::function<bool(std::string_view)>& onChunk) {
  const Clock::time_point started = Clock::now();
  globalInit();
  const std::string what = request.method + " " + urlForMessages(request.url);
  // For texts that cannot hold a secret value (template checks, fixed messages); the
  // caller's redactor still runs in case the template itself carries a literal credential.
  auto fail = [&](const std::string& why) { return std::optional<std::string>(redactor.redact(what + ": " + why)); };

  // libcurl with OpenSSL writes every TLS session key to this file when it is set.
  if (const char* keylog = std::getenv("SSLKEYLOGFILE"); keylog != nullptr && *keylog != '\0') {
    return fail("SSLKEYLOGFILE is set in the egress process's environment (TLS keys would be written to a file)");
  }
  if (policy.connectTimeoutMs <= 0 || policy.totalTimeoutMs <= 0) return fail("timeouts must be positive");

  // --- templates: where the placeholders are, before any secret is looked up
  Templates templates;
  if (auto e = checkTemplates(request, templates)) return fail(*e);
  const std::vector<Placeholder>& urlPlaceholders = templates.url;
  const std::vector<std::vector<Placeholder>>& headerPlaceholders = templates.headers;

  // --- the URL as curl will read it, with a harmless word in place of each placeholder
  std::string dummyUrl;
  {
    std::size_t at = 0;
    for (const Placeholder& p : urlPlaceholders) {
      dummyUrl.append(request.url, at, p.begin - at);
      dummyUrl += kDummy;
      at = p.end;
    }
    dummyUrl.append(request.url, at);
  }
  UrlHandle checked;
  if (checked.h == nullptr) return fail("out of memory");
  if (const CURLUcode rc = curl_url_set(checked.h, CURLUPART_URL, dummyUrl.c_str(), 0); rc != CURLUE_OK) {
    return fail(std::string("invalid URL: ") + curl_url_strerror(rc));
  }
  const std::string scheme = lowerAscii(checked.get(CURLUPART_SCHEME).value_or(""));
  const FtpMode ftp = ftpModeOf(request);
  if (ftp != FtpMode::None) {
    // ftps: TLS from the first byte; ftp: AUTH TLS required, unless allowPlainHttp (`tls: none`).
    if (scheme != "ftps" && scheme != "ftp") return fail("FTP-LIST and FTP-RETR take ftp and ftps URLs only");
    if (!request.headers.empty() || !request.body.empty()) return fail("an FTP request has no headers and no body");
  } else {
    if (scheme != "https" && scheme != "http") return fail("only http and https URLs are allowed");
    if (scheme == "http" && !policy.allowPlainHttp) return fail("plain http is refused (allowPlainHttp is off)");
  }
  const std::string host = checked.get(CURLUPART_HOST).value_or("");
  const std::string port = checked.get(CURLUPART_PORT, CURLU_DEFAULT_PORT).value_or("");
  if (host.empty() || port.empty()) return fail("the URL has no host");
  if (lowerAscii(host).find(kDummy) != std::string::npos) {
    return fail("a secret placeholder in the host part is refused (the host name is sent to DNS in clear)");
  }
  if (checked.get(CURLUPART_ZONEID)) return fail("IPv6 zone ids are refused");
  if (std::any_of(host.begin(), host.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; })) {
    return fail("non-ASCII host names are refused (use the punycode form)");
  }
  const bool literalV6 = host.size() > 2 && host.front() == '[' && host.back() == ']';
  const std::string bareHost = literalV6 ? host.substr(1, host.size() - 2) : host;
  if (!hostAllowed(bareHost, policy.allowHosts)) return fail("host " + host + " is not in allowHosts");

  // --- secrets: looked up only now that the templates are known to be acceptable
  std::map<std::string, std::string, std::less<>> values;
  auto lookup = [&](const std::string& name) -> std::optional<std::string> {
    if (values.count(name) != 0) return std::nullopt;
    std::optional<std::string> v = secrets.get(name);
    if (!v) return "unknown secret " + name;
    if (v->size() < redact::kMinKnownLength) {
      return "secret " + name + " is shorter than " + std::to_string(redact::kMinKnownLength) +
             " bytes, too short to redact from the response reliably, so it is not used";
    }
    values.emplace(name, std::move(*v));
    return std::nullopt;
  };
  for (const Placeholder& p : urlPlaceholders) {
    if (auto e = lookup(p.name)) return fail(*e);
  }
  for (const auto& list : headerPlaceholders) {
    for (const Placeholder& p : list) {
      if (auto e = lookup(p.name)) return fail(*e);
    }
  }
  // The values as they go out, also in the encoded form they take in the URL, so that
  // an echo of either is redacted.
  std::vector<std::string> usedValues;
  for (const auto& [name, value] : values) usedValues.push_back(value);
  std::string filledUrl;
  {
    std::size_t at = 0;
    for (const Placeholder& p : urlPlaceholders) {
      const std::string encoded = encodeFor(partAt(request.url, p.begin), values.at(p.name));
      if (encoded != values.at(p.name)) usedValues.push_back(encoded);
      filledUrl.append(request.url, at, p.begin - at);
      filledUrl += encoded;
      at = p.end;
    }
    filledUrl.append(request.url, at);
  }
  const redact::Redactor usedRedactor(usedValues);
  const Scrubber scrub{usedRedactor, redactor};
  auto failScrubbed = [&](const std::string& why) { return std::optional<std::string>(scrub(what + ": " + why)); };

  UrlHandle url;
  if (url.h == nullptr) return fail("out of memory");
  if (curl_url_set(url.h, CURLUPART_URL, filledUrl.c_str(), 0) != CURLUE_OK ||
      url.get(CURLUPART_HOST).value_or("") != host || url.get(CURLUPART_PORT, CURLU_DEFAULT_PORT).value_or("") != port ||
      lowerAscii(url.get(CURLUPART_SCHEME).value_or("")) != scheme) {
    // Cannot happen with encoded values; checked so that a parser surprise fails closed.
    return fail("the URL changed shape when the secrets were filled in");
  }

  std::unique_ptr<curl_slist, SlistDeleter> headerList;
  for (std::size_t i = 0; i < request.headers.size(); ++i) {
    const auto& [name, value] = request.headers[i];
    std::string filled;
    std::size_t at = 0;
    for (const Placeholder& p : headerPlaceholders[i]) {
      const std::string& v = values.at(p.name);
      if (v.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) {
        return fail("secret " + p.name + " contains a line break or NUL and cannot go into a header");
      }
      filled.append(value, at, p.begin - at);
      filled += v;
      at = p.end;
    }
    filled.append(value, at);
    // "Name:" would tell curl to remove the header; "Name;" sends it empty.
    const std::string line = filled.empty() ? name + ";" : name + ": " + filled;
    curl_slist* next = curl_slist_append(headerList.get(), line.c_str());
    if (next == nullptr) return fail("out of memory");
    headerList.release();
    headerList.reset(next);
  }
  // curl would add "Expect: 100-continue" to large bodies and wait for the server.
  if (!request.body.empty()) {
    curl_slist* next = curl_slist_append(headerList.get(), "Expect:");
    if (next == nullptr) return fail("out of memory");
    headerList.release();
    headerList.reset(next);
  }

  // --- where it goes: every address the name resolves to must pass
  const auto elapsedMs = [&] {
    return static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started).count());
  };
  Resolved resolved = resolve(bareHost, std::min(policy.connectTimeoutMs, policy.totalTimeoutMs));
  if (!resolved.error.empty()) return failScrubbed(resolved.error);
  const AddressRules rules{policy.allowPrivate, policy.allowLoopback};
  std::string pinned;
  for (const sockaddr_storage& ss : resolved.addrs) {
    const auto* sa = reinterpret_cast<const sockaddr*>(&ss);
    if (auto why = refusal(sa, rules)) {
      return failScrubbed(literalV6 || bareHost == addressText(sa) ? *why : "host " + host + " resolves to " + *why);
    }
    const std::string text = addressText(sa);
    if (pinned.find(text) != std::string::npos) continue;
    if (!pinned.empty()) pinned += ',';
    pinned += ss.ss_family == AF_INET6 ? "[" + text + "]" : text;
  }
  const long remainingMs = policy.totalTimeoutMs - elapsedMs();
  if (remainingMs <= 0) return failScrubbed("timed out after " + std::to_string(policy.totalTimeoutMs) + " ms");

  // --- the transfer
  std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
  if (!curl) return fail("cannot create a curl handle");
  CURL* c = curl.get();
  Transfer t(scrub, usedRedactor, redactor, onHead, onChunk);
  t.curl = c;
  t.allowed = &resolved.addrs;
  t.rules = rules;
  t.maxBytes = policy.maxResponseBytes;
  char errbuf[CURL_ERROR_SIZE] = {};

  // An IP literal is never looked up by curl; a name is answered from this entry.
  std::unique_ptr<curl_slist, SlistDeleter> resolveList;
  if (!literalV6 && bareHost != addressText(reinterpret_cast<const sockaddr*>(&resolved.addrs.front()))) {
    const std::string entry = bareHost + ":" + port + ":" + pinned;
    resolveList.reset(curl_slist_append(nullptr, entry.c_str()));
    if (!resolveList) return fail("out of memory");
  }

  bool setOk = true;
  auto set = [&](CURLoption opt, auto value) { setOk = setOk && curl_easy_setopt(c, opt, value) == CURLE_OK; };
  set(CURLOPT_ERRORBUFFER, errbuf);
  set(CURLOPT_NOSIGNAL, 1L);  // no SIGALRM for timeouts: other threads run in this process
  set(CURLOPT_CURLU, url.h);
  if (ftp != FtpMode::None) set(CURLOPT_PROTOCOLS_STR, scheme.c_str());
  else set(CURLOPT_PROTOCOLS_STR, policy.allowPlainHttp ? "http,https" : "https");
  set(CURLOPT_FOLLOWLOCATION, 0L);
  set(CURLOPT_NETRC, static_cast<long>(CURL_NETRC_IGNORED));
  set(CURLOPT_PROXY, "");     // "" and NOPROXY "*": the http_proxy/https_proxy/all_proxy
  set(CURLOPT_NOPROXY, "*");  // variables are never used
  set(CURLOPT_SSL_VERIFYPEER, 1L);
  set(CURLOPT_SSL_VERIFYHOST, 2L);
  set(CURLOPT_SSLVERSION, static_cast<long>(CURL_SSLVERSION_TLSv1_2));
  curl_blob caBlob{const_cast<char*>(policy.caPem.data()), policy.caPem.size(), CURL_BLOB_NOCOPY};
  if (!policy.caFile.empty()) {
    set(CURLOPT_CAINFO, policy.caFile.c_str());
    set(CURLOPT_CAPATH, static_cast<const char*>(nullptr));  // only the given bundle, not the system folder
  } else if (!policy.caPem.empty()) {
    // The bundle pined read for this job: the sandbox need not open the operator's file.
    set(CURLOPT_CAINFO_BLOB, &caBlob);
    set(CURLOPT_CAINFO, static_cast<const char*>(nullptr));
    set(CURLOPT_CAPATH, static_cast<const char*>(nullptr));
  }
  set(CURLOPT_CONNECTTIMEOUT_MS, std::min(policy.connectTimeoutMs, remainingMs));
  set(CURLOPT_TIMEOUT_MS, remainingMs);
  if (policy.idleTimeoutMs > 0) {
    set(CURLOPT_LOW_SPEED_LIMIT, 1L);  // bytes a second: "nothing arrives"
    set(CURLOPT_LOW_SPEED_TIME, std::max(1L, policy.idleTimeoutMs / 1000));
  }
  set(CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(policy.maxResponseBytes));
  set(CURLOPT_OPENSOCKETFUNCTION, &onOpenSocket);
  set(CURLOPT_OPENSOCKETDATA, &t);
  set(CURLOPT_WRITEFUNCTION, &onBody);
  set(CURLOPT_WRITEDATA, &t);
  if (resolveList) set(CURLOPT_RESOLVE, resolveList.get());
  if (ftp != FtpMode::None) {
    setOk = setOk && setFtpOptions(c, ftp, scheme == "ftp" && policy.allowPlainHttp);
    if (ftp == FtpMode::List) t.head.headers = {{"Ftp-Listing", "mlsd"}};
  } else {
    set(CURLOPT_ACCEPT_ENCODING, "");  // curl decodes, so redaction and the size cap see plain bytes
    set(CURLOPT_HEADERFUNCTION, &onHeaderLine);
    set(CURLOPT_HEADERDATA, &t);
    if (headerList) set(CURLOPT_HTTPHEADER, headerList.get());
  }
  if (ftp != FtpMode::None) {
  } else if (request.method == "GET" && request.body.empty()) {
    set(CURLOPT_HTTPGET, 1L);
  } else if (request.method == "HEAD" && request.body.empty()) {
    set(CURLOPT_NOBODY, 1L);
  } else {
    set(CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
    set(CURLOPT_POSTFIELDS, request.body.data());
    if (request.method != "POST") set(CURLOPT_CUSTOMREQUEST, request.method.c_str());
  }
  if (!setOk) return fail("this libcurl lacks an option egress needs (libcurl 7.85 or newer)");

  CURLcode rc = curl_easy_perform(c);
  if (ftp == FtpMode::List && rc == CURLE_FTP_COULDNT_RETR_FILE && t.bodyBytes == 0 && !t.headSent && !t.thrown &&
      t.error.empty()) {
    // The server refused MLSD (RFC 3659): the same folder again with LIST, unix `ls -l` lines.
    t.head.headers = {{"Ftp-Listing", "list"}};
    errbuf[0] = '\0';
    if (curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, static_cast<const char*>(nullptr)) != CURLE_OK)
      return fail("cannot fall back to LIST");
    rc = curl_easy_perform(c);
  }
  if (t.thrown) std::rethrow_exception(t.thrown);
  if (!t.error.empty()) return failScrubbed(t.error);
  if (rc == CURLE_FILESIZE_EXCEEDED) {
    return failScrubbed("response larger than " + std::to_string(policy.maxResponseBytes) + " bytes");
  }
  if (rc != CURLE_OK) {
    std::string why = curl_easy_strerror(rc);
    if (errbuf[0] != '\0') why += ": " + std::string(errbuf);
    // What a hostile or broken server did, in words; curl's own text stays in the message.
    switch (rc) {
      case CURLE_OPERATION_TIMEDOUT: why = "timed out (" + why + ")"; break;
      case CURLE_LOGIN_DENIED: why = "the FTP server refused the login (" + why + ")"; break;
      case CURLE_USE_SSL_FAILED: why = "the FTP server does not offer TLS (AUTH TLS), which is required (" + why + ")"; break;
      case CURLE_PEER_FAILED_VERIFICATION:
      case CURLE_SSL_CACERT_BADFILE: why = "TLS verification failed: " + why; break;
      // The scheme was checked above: an unsupported protocol now is the server's answer (its version).
      case CURLE_UNSUPPORTED_PROTOCOL:
      case CURLE_WEIRD_SERVER_REPLY:  // also FTP's (the same code): say which protocol it broke
        why = std::string(ftp != FtpMode::None ? "the server's answer is not a valid FTP reply (" : "the server's answer is not valid HTTP (") +
              why + ")";
        break;
      case CURLE_PARTIAL_FILE:
      case CURLE_RECV_ERROR:
      case CURLE_GOT_NOTHING: why = "the server closed the connection before the answer was complete (" + why + ")"; break;
      case CURLE_BAD_CONTENT_ENCODING: why = "the answer's Content-Encoding could not be decoded (" + why + ")"; break;
      case CURLE_OUT_OF_MEMORY:
        // What libcurl reports for a header line over its 100 KiB (CURL_MAX_HTTP_HEADER).
        if (t.headerBytes > 0 && !t.headSent) why = "a response header line is longer than libcurl's limit of 100 KiB";
        break;
      default: break;
    }
    return failScrubbed(why);
  }
  t.sendHead();
  // Two statements: the operands of + may be evaluated in either order.
  if (!t.usedStream && t.held.empty()) return std::nullopt;  // no body
  std::string tail;
  if (t.startStreams(true) && !t.held.empty()) tail = t.knownStream->feed(t.usedStream->feed(t.held));
  tail += t.knownStream->feed(t.usedStream->finish());
  tail += t.knownStream->finish();
  if (!t.deliver(tail)) return failScrubbed("the receiver stopped the transfer");
  return std::nullopt;
}

}  // namespace pine::egress
