#include "web/fetch.h"

#include <algorithm>
#include <cctype>

#include "egress/egress.h"
#include "web/host_rules.h"
#include "web/html_text.h"
#include "web/url.h"

namespace pine::web {
namespace {

// curl refuses a declared Content-Length over this before reading; below it, maxBodyBytes cuts.
constexpr std::size_t kHardLimit = 64u << 20;
// The text sent back: with control characters gone, its JSON line stays under the broker's 4 MiB
// a line whatever the page holds (the model sees the first 64 KiB of it anyway).
constexpr std::size_t kMaxTextBytes = 1u << 20;

// fetch fills in no secret: a ${secret:NAME} in a model's URL finds nothing here.
struct NoSecrets final : egress::SecretLookup {
  std::optional<std::string> get(std::string_view) const override { return std::nullopt; }
};

std::string headerValue(const egress::EgressResponseHead& head, const std::string& name) {
  for (const auto& [k, v] : head.headers)
    if (lowerAscii(k) == name) return v;
  return {};
}

// Control characters (but newline and tab) become spaces: JSON would spell each in six bytes.
// A longer text is cut at a character's start, and `notes` says so.
std::string forTheModel(std::string text, std::string& notes) {
  for (auto& c : text)
    if ((static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') || c == 0x7f) c = ' ';
  if (text.size() <= kMaxTextBytes) return text;
  std::size_t at = kMaxTextBytes;
  while (at > 0 && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) --at;
  text.resize(at);
  notes += "Cut: the text is longer than " + std::to_string(kMaxTextBytes) + " bytes; this is its start\n";
  return text;
}

}  // namespace

std::string contentKind(const std::string& contentType) {
  std::string t = lowerAscii(contentType.substr(0, contentType.find(';')));
  t.erase(std::remove_if(t.begin(), t.end(), [](char c) { return c == ' ' || c == '\t'; }), t.end());
  if (t == "text/html" || t == "application/xhtml+xml") return "html";
  if (t == "text/plain" || t == "application/json" || t == "text/json" ||
      (t.starts_with("application/") && t.ends_with("+json")))
    return "text";
  return "";
}

ToolResult fetchUrl(const std::string& url, const FetchRules& rules) {
  static const redact::Redactor noKnownValues({});
  std::string current = url;
  for (int hop = 0;; ++hop) {
    std::string why;
    auto parts = parseWebUrl(current, why);
    if (!parts) return {true, hop ? "redirect to " + current + " refused: " + why : why};
    if (current.find("${") != std::string::npos)
      return {true, "'${' in an address is refused (pine's secret placeholders are not filled in by fetch)"};
    if (auto refused = hostRefusal(parts->host, rules.allowHosts, rules.denyHosts))
      return {true, hop ? "redirect to " + parts->url + " refused: " + *refused : *refused};
    if (parts->scheme == "http" && !rules.allowPrivate) {
      const std::string why = "plain http is refused (" + parts->url + "): use https (allowPrivate: true also allows http)";
      return {true, hop ? "redirect refused: " + why : why};
    }

    egress::EgressRequest req;
    req.url = parts->url;
    req.headers = {{"Accept", "text/html, application/xhtml+xml, text/plain, application/json;q=0.9, */*;q=0.1"},
                   {"User-Agent", "pine-web"}};
    egress::EgressPolicy policy;
    policy.allowPrivate = rules.allowPrivate;
    policy.allowLoopback = rules.allowPrivate;
    policy.allowPlainHttp = rules.allowPrivate;
    policy.connectTimeoutMs = rules.connectTimeoutMs;
    policy.totalTimeoutMs = rules.totalTimeoutMs;
    policy.idleTimeoutMs = 15000;
    policy.maxResponseBytes = std::max(kHardLimit, rules.maxBodyBytes + 1);

    egress::EgressResponseHead head;
    bool redirect = false, cut = false;
    std::string body;
    auto error = egress::perform(
        req, policy, NoSecrets{}, noKnownValues,
        [&](const egress::EgressResponseHead& h) {
          head = h;
          redirect = h.status >= 300 && h.status < 400;
        },
        [&](std::string_view chunk) {
          if (redirect) return false;  // a redirect's body is not read
          const std::size_t room = rules.maxBodyBytes - body.size();
          if (chunk.size() > room) {
            body.append(chunk.substr(0, room));
            cut = true;
            return false;
          }
          body.append(chunk);
          return true;
        });
    if (error && !cut && !redirect) return {true, hop ? "redirect to " + parts->url + ": " + *error : *error};

    if (redirect) {
      const std::string location = headerValue(head, "location");
      if (location.empty())
        return {true, parts->url + " answered " + std::to_string(head.status) + " without a Location to go to"};
      if (hop >= rules.maxRedirects)
        return {true, "more than " + std::to_string(rules.maxRedirects) + " redirects (the last from " + parts->url +
                          " to " + location + "): not followed"};
      auto next = resolveUrl(parts->url, location);
      if (!next) return {true, parts->url + " redirects to '" + location + "', which is not an address"};
      current = *next;
      continue;
    }
    if (head.status < 200 || head.status >= 300)
      return {true, parts->url + " answered HTTP " + std::to_string(head.status)};
    const std::string type = headerValue(head, "content-type");
    const std::string kind = contentKind(type);
    if (kind.empty())
      return {true, parts->url + " is " + (type.empty() ? "of no declared type" : "'" + type + "'") +
                        ": fetch reads HTML, plain text and JSON only"};
    ToolResult r;
    // Notes go first: what reaches the model may be cut again at the broker's cap.
    std::string notes;
    if (cut) notes += "Cut: the page is longer than " + std::to_string(rules.maxBodyBytes) + " bytes; only those were read\n";
    std::string text = forTheModel(kind == "html" ? htmlToText(body, parts->url) : std::move(body), notes);
    r.text = "URL: " + parts->url + "\nContent-Type: " + type + "\n" + notes + "\n" + text;
    return r;
  }
}

}  // namespace pine::web
