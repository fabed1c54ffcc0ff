#include "browser/page_tools.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <thread>

#include "web/html_text.h"
#include "web/mcp_loop.h"
#include "web/url.h"

namespace pine::browser {
namespace {

using nlohmann::json;

constexpr size_t kMaxTextBytes = 1u << 20;
constexpr int kLoadWaitMs = 20000;
constexpr size_t kMaxTabs = 8;

std::string stringArg(const json& args, const char* key) {
  auto it = args.find(key);
  return it != args.end() && it->is_string() ? it->get<std::string>() : std::string();
}

json ok(const std::string& text) { return web::textResult(false, text); }
json fail(const std::string& text) { return web::textResult(true, text); }

// A JavaScript string literal (JSON's is one).
std::string jsString(const std::string& s) { return json(s).dump(-1, ' ', true, json::error_handler_t::replace); }

json tool(const char* name, const char* title, const char* description, json properties, json required, bool readOnly) {
  return {{"name", name},
          {"description", description},
          {"inputSchema", {{"type", "object"}, {"properties", std::move(properties)}, {"required", std::move(required)}}},
          {"annotations", {{"title", title}, {"readOnlyHint", readOnly}, {"openWorldHint", true}}}};
}

}  // namespace

json PageTools::list() const {
  json tools = json::array();
  tools.push_back(tool("open", "Open a page",
                       "Open a web address in the browser (https; http only where the owner allows it). Addresses on this "
                       "machine or a private network are refused unless the owner allows them. Returns the page's title and "
                       "address; use read for its text.",
                       {{"url", {{"type", "string"}, {"description", "the address"}}}}, {"url"}, false));
  tools.push_back(tool("read", "Read the page", "The open page's text, with links as 'text (url)'.", json::object(),
                       json::array(), true));
  tools.push_back(tool("click", "Click",
                       "Click the first element matching a CSS selector (with 'text': the first of them containing that text).",
                       {{"selector", {{"type", "string"}, {"description", "a CSS selector, e.g. a, button, #submit"}}},
                        {"text", {{"type", "string"}, {"description", "optional: text the element contains"}}}},
                       {"selector"}, false));
  tools.push_back(tool("type", "Type", "Type text into the element matching a CSS selector (an input or text area).",
                       {{"selector", {{"type", "string"}, {"description", "a CSS selector"}}},
                        {"text", {{"type", "string"}, {"description", "what to type"}}}},
                       {"selector", "text"}, false));
  tools.push_back(tool("back", "Go back", "Go back to the previous page.", json::object(), json::array(), false));
  if (!job_.screenshots.empty())
    tools.push_back(tool("screenshot", "Screenshot",
                         "A PNG of the visible page, saved in the workspace's screenshots folder; returns its path.",
                         json::object(), json::array(), false));
  return tools;
}

std::string PageTools::session() {
  auto it = tabs_.find(current_);
  if (it != tabs_.end()) {
    it->second.used = ++clock_;
    return it->second.session;
  }
  if (tabs_.size() >= kMaxTabs) {  // the one used longest ago makes room
    auto old = tabs_.begin();
    for (auto t = tabs_.begin(); t != tabs_.end(); ++t)
      if (t->second.used < old->second.used) old = t;
    try {
      if (!old->second.context.empty())
        cdp_.call("Target.disposeBrowserContext", {{"browserContextId", old->second.context}});
      else
        cdp_.call("Target.closeTarget", {{"targetId", old->second.target}});
    } catch (const CdpError&) {
      // gone already
    }
    tabs_.erase(old);
  }
  // A fresh profile: a browser context of its own (cookies and storage in memory, gone with
  // the process). A named profile: its default context, where its cookies are.
  Tab tab;
  json create = {{"url", "about:blank"}};
  if (!job_.persistent) {
    tab.context = cdp_.call("Target.createBrowserContext", {{"disposeOnDetach", true}}).value("browserContextId", "");
    create["browserContextId"] = tab.context;
  }
  tab.target = cdp_.call("Target.createTarget", create).value("targetId", "");
  json attached = cdp_.call("Target.attachToTarget", {{"targetId", tab.target}, {"flatten", true}});
  tab.session = attached.value("sessionId", "");
  if (tab.session.empty()) throw CdpError("Chromium gave no session for the page");
  cdp_.call("Page.enable", json::object(), tab.session);
  tab.used = ++clock_;
  tabs_[current_] = tab;
  return tab.session;
}

json PageTools::evaluate(const std::string& expression) {
  json r = cdp_.call("Runtime.evaluate", {{"expression", expression}, {"returnByValue", true}, {"awaitPromise", true}},
                     session());
  if (r.contains("exceptionDetails")) {
    const json& d = r["exceptionDetails"];
    std::string text = d.contains("exception") && d["exception"].is_object() && d["exception"].contains("description") &&
                               d["exception"]["description"].is_string()
                           ? d["exception"]["description"].get<std::string>()
                           : d.value("text", std::string("an exception"));
    throw CdpError(text.substr(0, 500));
  }
  return r.contains("result") && r["result"].is_object() && r["result"].contains("value") ? r["result"]["value"] : json();
}

void PageTools::waitLoaded() {
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(kLoadWaitMs);
  while (std::chrono::steady_clock::now() < until) {
    try {
      if (evaluate("document.readyState") == "complete") return;
    } catch (const CdpError&) {
      // a navigation replaced the context mid-call: ask again
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

std::string PageTools::where() {
  json v = evaluate("JSON.stringify([location.href, document.title])");
  json pair = v.is_string() ? json::parse(v.get<std::string>(), nullptr, false) : json();
  if (!pair.is_array() || pair.size() != 2 || !pair[0].is_string() || !pair[1].is_string()) return "an unknown page";
  return pair[0].get<std::string>() + (pair[1].get<std::string>().empty() ? "" : " (\"" + pair[1].get<std::string>() + "\")");
}

std::string PageTools::refusalNote(size_t mark) {
  auto refused = proxy_.refusalsSince(mark);
  if (refused.empty()) return "";
  std::string out = "\nRefused by the web rules:";
  std::vector<std::string> said;  // each reason once
  for (size_t i = 0; i < refused.size() && said.size() < 20; ++i)
    if (std::find(said.begin(), said.end(), refused[i]) == said.end()) {
      said.push_back(refused[i]);
      out += "\n- " + refused[i];
    }
  return out;
}

bool PageTools::refusedPage() {
  // The proxy's own answer (a plain http request it refused) is what Chromium shows then.
  try {
    return evaluate("document.contentType === 'text/plain' && !!document.body && "
                    "document.body.innerText.startsWith('pine-browser refused this address:')") == true;
  } catch (const CdpError&) {
    return false;
  }
}

json PageTools::open(const json& args) {
  const std::string url = stringArg(args, "url");
  if (url.empty()) return fail("open needs a 'url' (an http or https address)");
  std::string why;
  auto parts = web::parseWebUrl(url, why);
  if (!parts) return fail("cannot open '" + url + "': " + why);
  if (url.find("${") != std::string::npos) return fail("cannot open '" + url + "': an address with '${' (no secret is filled in)");
  std::vector<sockaddr_storage> addrs;
  const int port = 0;
  if (auto refused = checkDestination(parts->host, port, parts->scheme == "http", proxy_.rules(), addrs))
    return fail("refused: " + *refused);
  const size_t mark = proxy_.mark();
  json nav = cdp_.call("Page.navigate", {{"url", parts->url}}, session());
  if (nav.contains("errorText") && nav["errorText"].is_string() && !nav["errorText"].get<std::string>().empty())
    return fail("could not open " + parts->url + ": " + nav["errorText"].get<std::string>() + refusalNote(mark));
  waitLoaded();
  if (refusedPage()) return fail("could not open " + parts->url + ": a redirect was refused" + refusalNote(mark));
  return ok("Opened " + where() + refusalNote(mark));
}

json PageTools::read() {
  json v = evaluate("JSON.stringify([location.href, document.documentElement ? document.documentElement.outerHTML : ''])");
  json pair = v.is_string() ? json::parse(v.get<std::string>(), nullptr, false) : json();
  if (!pair.is_array() || pair.size() != 2 || !pair[0].is_string() || !pair[1].is_string())
    return fail("the page gave no HTML to read");
  const std::string href = pair[0];
  std::string text = web::htmlToText(pair[1].get<std::string>(), href);
  std::string out = "URL: " + href + "\n\n" + text;
  if (out.size() > kMaxTextBytes) {
    out.resize(kMaxTextBytes);
    out += "\n[cut at 1 MiB]";
  }
  return ok(out);
}

json PageTools::click(const json& args) {
  const std::string selector = stringArg(args, "selector");
  if (selector.empty()) return fail("click needs a 'selector' (a CSS selector)");
  const bool byText = args.contains("text") && args["text"].is_string();
  const std::string js = "(() => { const all = Array.from(document.querySelectorAll(" + jsString(selector) +
                         ")); const t = " + (byText ? jsString(args["text"].get<std::string>()) : std::string("null")) +
                         "; const el = t === null ? all[0] : all.find(e => (e.innerText || e.textContent || '').includes(t));"
                         " if (!el) return 'none:' + all.length; el.scrollIntoView({block: 'center'}); el.click(); return 'ok'; })()";
  const size_t mark = proxy_.mark();
  json r = evaluate(js);
  if (r.is_string() && r.get<std::string>().rfind("none:", 0) == 0)
    return fail("nothing to click: " + r.get<std::string>().substr(5) + " element(s) match '" + selector + "'" +
                (byText ? " and none of them contains that text" : ""));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // a navigation the click started
  waitLoaded();
  std::string now = where();
  if (now.rfind("chrome-error://", 0) == 0 || refusedPage())
    return fail("the click led to a page that could not be opened" + refusalNote(mark));
  return ok("Clicked; the page is " + now + refusalNote(mark));
}

json PageTools::type(const json& args) {
  const std::string selector = stringArg(args, "selector");
  if (selector.empty() || !args.contains("text") || !args["text"].is_string())
    return fail("type needs a 'selector' (a CSS selector) and a 'text'");
  json r = evaluate("(() => { const el = document.querySelector(" + jsString(selector) +
                    "); if (!el) return false; el.focus(); if ('value' in el) el.value = ''; return true; })()");
  if (r != true) return fail("no element matches '" + selector + "'");
  cdp_.call("Input.insertText", {{"text", args["text"].get<std::string>()}}, session());
  return ok("Typed into '" + selector + "'");
}

json PageTools::back() {
  json h = cdp_.call("Page.getNavigationHistory", json::object(), session());
  int current = h.value("currentIndex", 0);
  if (!h.contains("entries") || !h["entries"].is_array() || current <= 0 || current >= (int)h["entries"].size())
    return fail("there is no earlier page to go back to");
  const json& entry = h["entries"][static_cast<size_t>(current - 1)];
  const size_t mark = proxy_.mark();
  cdp_.call("Page.navigateToHistoryEntry", {{"entryId", entry.value("id", 0)}}, session());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  waitLoaded();
  return ok("Back at " + where() + refusalNote(mark));
}

json PageTools::screenshot() {
  if (job_.screenshots.empty()) return fail("this server has no screenshots folder");
  json r = cdp_.call("Page.captureScreenshot", {{"format", "png"}}, session());
  const std::string b64 = r.value("data", "");
  if (b64.empty()) return fail("Chromium gave no picture");
  std::string png(b64.size() / 4 * 3 + 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(png.data()), reinterpret_cast<const unsigned char*>(b64.data()),
                          static_cast<int>(b64.size()));
  if (n < 0) return fail("Chromium's picture is not base64");
  size_t pad = b64.size() >= 2 ? (b64[b64.size() - 1] == '=') + (b64[b64.size() - 2] == '=') : 0;
  png.resize(static_cast<size_t>(n) - pad);
  char stamp[32];
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
  for (int i = 0; i < 100; ++i) {
    const std::string name = std::string(stamp) + (i ? "-" + std::to_string(i) : "") + ".png";
    int fd = ::open((job_.screenshots + "/" + name).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno == EEXIST) continue;
    if (fd < 0) return fail("cannot write the screenshot: " + std::string(strerror(errno)));
    bool written = web::writeAll(fd, png);
    close(fd);
    if (!written) return fail("cannot write the screenshot");
    const std::string shown = (job_.screenshotsShown.empty() ? "screenshots" : job_.screenshotsShown) + "/" + name;
    json result = ok("Saved the visible page as " + shown + " (PNG, " + std::to_string(png.size()) + " bytes)");
    result["content"].push_back({{"type", "image"}, {"data", b64}, {"mimeType", "image/png"}});
    return result;
  }
  return fail("cannot name the screenshot: too many in this second");
}

json PageTools::call(const std::string& tool, const json& args, const std::string& conversation) {
  std::lock_guard<std::mutex> lock(mu_);
  current_ = conversation.substr(0, 256);
  try {
    if (tool == "open") return open(args);
    if (tool == "read") return read();
    if (tool == "click") return click(args);
    if (tool == "type") return type(args);
    if (tool == "back") return back();
    if (tool == "screenshot" && !job_.screenshots.empty()) return screenshot();
    return fail("no tool '" + tool + "' (this server has: open, read, click, type, back" +
                std::string(job_.screenshots.empty() ? "" : ", screenshot") + ")");
  } catch (const CdpError& e) {
    return fail(tool + " failed: " + e.what());
  }
}

}  // namespace pine::browser
