// The browser's tools as the model calls them (open, read, click, type, back, screenshot),
// each on the page of a browser context of its own (a fresh profile in Chromium's memory),
// driven over the DevTools protocol. Every error is an error result, never a crash. What a
// page says is a stranger's text: it comes back as text, and the server always taints.
#pragma once
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
  nlohmann::json call(const std::string& tool, const nlohmann::json& args);

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
  std::mutex mu_;
  std::string session_;
};

}  // namespace pine::browser
