// The `search` tool: a query to the search service the owner configured, speaking the Brave
// Search API's wire format (GET with `q` and `count`, the key in X-Subscription-Token, JSON
// web.results[].{title,url,description}). The key goes in as a ${secret:NAME} placeholder that
// egress::perform() fills in and redacts from everything that comes back.
#pragma once
#include <string>

#include "web/fetch.h"
#include "web/job/web_job.h"

namespace pine::web {

constexpr int kMaxSearchResults = 10;

ToolResult searchWeb(const std::string& query, const WebJob& job);

// The results part of a Brave Search API answer as text (at most kMaxSearchResults); an error
// result when the answer is not one.
ToolResult searchResultsText(const std::string& body);

}  // namespace pine::web
