#include "broker/policy/topics.h"

#include <cstdio>

#include "common/glob.h"
#include "common/outside_text.h"
#include "broker/policy/quote.h"

namespace pine::policy {
namespace {

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
  // Level by level over views of both, nothing split into a list: routing asks this for every
  // route and committed event.
  constexpr auto npos = std::string_view::npos;
  size_t pi = 0, ti = 0;
  bool topicLeft = true;  // the topic has a level at ti (an empty topic is one empty level)
  for (;;) {
    size_t pe = pattern.find('/', pi);
    std::string_view p = pattern.substr(pi, pe == npos ? npos : pe - pi);
    bool lastLevel = pe == npos;
    if (p == "#") return lastLevel;  // '#' elsewhere than last: malformed, no match
    if (p.find('#') != npos) return false;
    if (p.find('+') != npos && p != "+") return false;
    if (!topicLeft) return false;
    size_t te = topic.find('/', ti);
    if (p != "+" && !globMatch(p, topic.substr(ti, te == npos ? npos : te - ti))) return false;
    topicLeft = te != npos;
    if (lastLevel) return !topicLeft;
    pi = pe + 1;
    if (topicLeft) ti = te + 1;
  }
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
