// The browser's tools as the model calls them (open, read, click, type, back, screenshot),
// on a page of the calling conversation's own (the broker names it in the call's _meta): with a
// fresh profile each conversation has a browser context of its own (cookies and storage in
// Chromium's memory, apart from the others'); with a named profile a tab of its own in that
// profile. At most 8 are kept; the one used longest ago is closed for a ninth. Driven over the
// DevTools protocol. Every error is an error result, never a crash. What a
// page says is a stranger's text: it comes back as text, and the server always taints.
#pragma once
#include <map>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "browser/cdp_client.h"
#include "browser/job/browser_job.h"
#include "browser/proxy.h"

namespace pine::browser {

class PageTools {
 public:
  PageTools(CdpClient& cdp, Proxy& proxy, const BrowserJob& job) : cdp_(cdp), proxy_(proxy), job_(job) {}
  // tools/list's array.
  nlohmann::json list() const;
  // A tools/call result ({content, isError}); one call at a time.
  nlohmann::json call(const std::string& tool, const nlohmann::json& args, const std::string& conversation = "");

 private:
  std::string session();
  nlohmann::json evaluate(const std::string& expression);
  void waitLoaded();
  std::string where();
  std::string refusalNote(size_t mark);
  bool refusedPage();
  nlohmann::json open(const nlohmann::json& args);
  nlohmann::json read();
  nlohmann::json click(const nlohmann::json& args);
  nlohmann::json type(const nlohmann::json& args);
  nlohmann::json back();
  nlohmann::json screenshot();

  CdpClient& cdp_;
  Proxy& proxy_;
  const BrowserJob& job_;
  struct Tab {
    std::string session, target, context;
    unsigned long long used = 0;
  };
  std::mutex mu_;
  std::map<std::string, Tab> tabs_;  // by conversation
  std::string current_;             // the conversation of the call running now
  unsigned long long clock_ = 0;
};

}  // namespace pine::browser
