#include "broker/policy/topics.h"

#include <cstdio>
#include <vector>

#include "common/glob.h"
#include "common/outside_text.h"
#include "broker/policy/quote.h"

namespace pine::policy {
namespace {

std::vector<std::string_view> levels(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (true) {
    size_t j = s.find('/', i);
    if (j == std::string_view::npos) {
      out.push_back(s.substr(i));
      return out;
    }
    out.push_back(s.substr(i, j - i));
    i = j + 1;
  }
}

// Length of the valid UTF-8 sequence at s[i], 0 when invalid (overlong, surrogate, > U+10FFFF).
size_t utf8Length(std::string_view s, size_t i, unsigned* cp) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  size_t n;
  unsigned v;
  if (c < 0x80) { *cp = c; return 1; }
  if (c >= 0xC2 && c <= 0xDF) { n = 2; v = c & 0x1F; }
  else if (c >= 0xE0 && c <= 0xEF) { n = 3; v = c & 0x0F; }
  else if (c >= 0xF0 && c <= 0xF4) { n = 4; v = c & 0x07; }
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    unsigned char d = static_cast<unsigned char>(s[i + k]);
    if ((d & 0xC0) != 0x80) return 0;
    v = (v << 6) | (d & 0x3F);
  }
  if ((n == 3 && v < 0x800) || (n == 4 && (v < 0x10000 || v > 0x10FFFF)) || (v >= 0xD800 && v <= 0xDFFF)) return 0;
  *cp = v;
  return n;
}

}  // namespace

bool isReservedTopic(std::string_view topic) {
  std::string_view first = topic.substr(0, topic.find('/'));
  for (std::string_view word : {"agent", "approval", "pine", "state", "timer"})
    if (first == word) return true;
  return false;
}

bool topicMatches(std::string_view pattern, std::string_view topic) {
  if (pattern.empty()) return false;
  auto pat = levels(pattern);
  auto top = levels(topic);
  for (size_t i = 0; i < pat.size(); ++i) {
    std::string_view p = pat[i];
    if (p == "#") return i + 1 == pat.size();  // '#' elsewhere than last: malformed, no match
    if (p.find('#') != std::string_view::npos) return false;
    if (p.find('+') != std::string_view::npos && p != "+") return false;
    if (i >= top.size()) return false;
    if (p == "+") continue;
    if (!globMatch(p, top[i])) return false;
  }
  return pat.size() == top.size();
}

std::optional<std::string> validateTopic(std::string_view topic) {
  if (topic.empty()) return "the topic is empty; name one such as 'house/lamp'";
  if (topic.size() > kMaxTopicBytes)
    return "the topic " + quoteText(topic, 40) + " is " + std::to_string(topic.size()) + " bytes long; at most " +
           std::to_string(kMaxTopicBytes) + " are allowed";
  for (size_t i = 0; i < topic.size();) {
    unsigned cp = 0;
    size_t n = utf8Length(topic, i, &cp);
    if (n == 0) return "the topic " + quoteText(topic) + " is not valid UTF-8 (byte " + std::to_string(i) + ")";
    if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F))
      return "the topic " + quoteText(topic) + " contains a control character at byte " + std::to_string(i) +
             "; use printable text";
    // Topics are shown to the owner (questions, logs, pinectl): nothing that reorders or hides text.
    if (invisibleCodePoint(cp)) {
      char hex[16];
      snprintf(hex, sizeof hex, "%04X", cp);
      return "the topic contains an invisible character (U+" + std::string(hex) + ", which reorders or hides text) at byte " +
             std::to_string(i) + "; use visible text";
    }
    i += n;
  }
  for (char w : {'+', '#'})
    if (auto at = topic.find(w); at != std::string_view::npos)
      return "the topic " + quoteText(topic) + " contains the wildcard '" + std::string(1, w) + "' at byte " +
             std::to_string(at) + "; wildcards belong in subscriptions, not in a published topic";
  if (topic.front() == '/' || topic.back() == '/' || topic.find("//") != std::string_view::npos)
    return "the topic " + quoteText(topic) + " has an empty level (a leading, trailing or double '/'); " +
           "separate levels by single '/'";
  return std::nullopt;
}

std::optional<std::string> checkPublish(const config::AgentConfig& agent, std::string_view topic) {
  if (auto bad = validateTopic(topic)) return "agent '" + agent.id + "' cannot publish: " + *bad;
  if (isReservedTopic(topic))
    return "agent '" + agent.id + "' cannot publish on " + quoteText(topic) +
           ": agent/, approval/, pine/, state/ and timer/ are pine's own topics";
  for (const auto& p : agent.publish)
    if (topicMatches(p, topic)) return std::nullopt;
  if (agent.publish.empty())
    return "agent '" + agent.id + "' cannot publish on " + quoteText(topic) +
           ": its agent.yaml has no 'publish' list; add the topics it may use (e.g. 'house/#')";
  return "agent '" + agent.id + "' cannot publish on " + quoteText(topic) + ": no pattern of its agent.yaml 'publish' list (" +
         quoteList(agent.publish) + ") matches it; add one if it should";
}

config::Trust publishTrust(config::Trust runTrust, bool sessionTainted) {
  return (runTrust == config::Trust::Untrusted || sessionTainted) ? config::Trust::Untrusted : config::Trust::Owner;
}

}  // namespace pine::policy
