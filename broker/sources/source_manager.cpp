#include "broker/sources/source_manager.h"

#include <fmt/format.h>

#include <set>
#include <tuple>

#include "broker/policy/topics.h"

namespace pine::sources {
namespace {

// What a running connection depends on: a change to any of these restarts it.
bool sameConnection(const config::Source& a, const config::Source& b) {
  return std::tie(a.type, a.url, a.topics, a.publish, a.usernameSecret, a.passwordSecret, a.trust) ==
         std::tie(b.type, b.url, b.topics, b.publish, b.usernameSecret, b.passwordSecret, b.trust);
}

// A source that names a program (`use`), or whose type is a registered sourceTypes entry.
bool runsProgram(const config::Source& s) {
  static const std::set<std::string> builtin = {"webhook", "mqtt", "folder", "http", "command", "telegram", "ftp"};
  return !s.use.empty() || !builtin.count(s.type);
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

SourceManager::SourceManager(kj::AsyncIoContext& io, Sink sink) : SourceManager(io, std::move(sink), Options{}) {}

SourceManager::SourceManager(kj::AsyncIoContext& io, Sink sink, Options options)
    : io_(io), sink_(std::move(sink)), options_(options) {
  pump_ = pump().eagerlyEvaluate([](kj::Exception&& e) {
    spdlog::error("sources: stopped handing on messages: {}", e.getDescription().cStr());
  });
}

SourceManager::~SourceManager() {
  // Join every client thread before the inbox they write to goes away.
  clients_.clear();
  programs_.clear();
}

kj::Promise<void> SourceManager::pump() {
  return inbox_.next().then([this](std::vector<InboxItem> items) {
    deliver(std::move(items));
    return pump();
  });
}

void SourceManager::deliver(std::vector<InboxItem> items) {
  for (auto& item : items) {
    if (item.isLog) {
      spdlog::log(item.level, "{}", item.text);
      continue;
    }
    // A message that a since-stopped (or restarted) source heard is not handed on:
    // its trust or topics may have changed in between.
    auto it = clients_.find(item.draft.source);
    if (it == clients_.end() || it->second->id() != item.client) continue;
    try {
      sink_(std::move(item.draft));
    } catch (const std::exception& e) {
      spdlog::error("source '{}': the broker did not take a message: {}", it->first, e.what());
    } catch (const kj::Exception& e) {
      spdlog::error("source '{}': the broker did not take a message: {}", it->first, e.getDescription().cStr());
    }
  }
}

void SourceManager::refuse(const config::Source& s, std::string reason) {
  auto it = refused_.find(s.name);
  bool known = it != refused_.end() && sameConnection(it->second.source, s) && it->second.reason == reason;
  if (!known) spdlog::warn("{}", reason);  // once per configuration, not on every update
  refused_[s.name] = Refused{s, std::move(reason)};
}

std::optional<std::string> SourceManager::whyNotStartable(const config::Source& s, MqttAddress& address) const {
  if (s.type != "mqtt")
    return fmt::format("source '{}': type '{}' is not implemented yet; it is not started", s.name, s.type);
  // The broker holds no secrets (only pined reads .env), so it has nothing to log in with.
  if (!s.usernameSecret.empty() || !s.passwordSecret.empty())
    return fmt::format(
        "source '{}': authenticated MQTT is not supported yet (it names usernameSecret/passwordSecret); it is not "
        "started. Remove them to connect anonymously, or use a broker that allows anonymous clients",
        s.name);
  if (auto why = parseMqttUrl(s.url, address)) return fmt::format("source '{}': {}; it is not started", s.name, *why);
  return std::nullopt;
}

void SourceManager::update(const std::vector<config::Source>& wanted) {
  std::map<std::string, const config::Source*> byName;
  for (const auto& s : wanted) byName[s.name] = &s;

  for (auto it = clients_.begin(); it != clients_.end();) {
    auto w = byName.find(it->first);
    if (w == byName.end()) {
      spdlog::info("source '{}': stopped, nobody wants it any more", it->first);
      it = clients_.erase(it);
    } else if (!sameConnection(it->second->source(), *w->second)) {
      spdlog::info("source '{}': configuration changed, restarting it", it->first);
      it = clients_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = programs_.begin(); it != programs_.end();) {
    auto w = byName.find(it->first);
    bool keep = w != byName.end() && sameProgram(it->second->source(), *w->second);
    if (!keep) spdlog::info("source '{}': stopping its program ({})", it->first, w == byName.end() ? "nobody wants it any more" : "configuration changed");
    it = keep ? std::next(it) : programs_.erase(it);
  }
  for (auto it = refused_.begin(); it != refused_.end();)
    it = byName.count(it->first) ? std::next(it) : refused_.erase(it);

  for (const auto& s : wanted) {
    if (clients_.count(s.name)) continue;
    if (s.type == "webhook") continue;  // served by the control API at /hooks/<name> (hook_intake)
    if (runsProgram(s)) {
      if (programs_.count(s.name)) continue;
      if (!options_.startProgram) {
        refuse(s, fmt::format("source '{}': source programs are not started here", s.name));
        continue;
      }
      refused_.erase(s.name);
      programs_[s.name] = std::make_unique<ProgramSource>(io_.provider->getTimer(), s, options_.startProgram, sink_,
                                                          options_.report);
      continue;
    }
    MqttAddress address;
    if (auto why = whyNotStartable(s, address)) {
      refuse(s, std::move(*why));
      continue;
    }
    auto client = std::make_unique<MqttClient>(s, address, nextId_++, inbox_, options_.reconnect);
    if (auto why = client->start()) {
      refuse(s, std::move(*why));
      continue;
    }
    refused_.erase(s.name);
    spdlog::info("source '{}': started (mqtt {}:{}, topics {})", s.name, address.host, address.port,
                 joined(s.topics));
    clients_[s.name] = std::move(client);
  }
}

std::vector<std::string> SourceManager::running() const {
  std::vector<std::string> out;
  for (const auto& [name, client] : clients_) out.push_back(name);
  for (const auto& [name, program] : programs_)
    if (!program->whyNotRunning()) out.push_back(name);
  std::sort(out.begin(), out.end());
  return out;
}

std::map<std::string, std::string> SourceManager::notRunning() const {
  std::map<std::string, std::string> out;
  for (const auto& [name, r] : refused_) out[name] = r.reason;
  for (const auto& [name, program] : programs_)
    if (auto why = program->whyNotRunning()) out[name] = *why;
  return out;
}

std::optional<std::string> SourceManager::publish(const std::string& source, const std::string& topic,
                                                  const std::string& payload) {
  if (auto p = programs_.find(source); p != programs_.end()) {
    if (auto why = checkPublishTopic(p->second->source(), topic)) return why;
    return p->second->publish(topic, payload);
  }
  auto it = clients_.find(source);
  if (it == clients_.end()) {
    auto r = refused_.find(source);
    if (r != refused_.end()) return "cannot publish through " + r->second.reason;
    return fmt::format(
        "no running source named '{}': a source runs only while a subscription or a route names it, or with "
        "start: always",
        source);
  }
  if (auto why = checkPublishTopic(it->second->source(), topic)) return why;
  return it->second->publish(topic, payload);
}

std::optional<std::string> SourceManager::checkPublishTopic(const config::Source& s, const std::string& topic) const {
  const std::string& source = s.name;
  if (auto why = policy::validateTopic(topic))
    return fmt::format("source '{}' cannot publish on '{}': {}", source, topic, *why);
  if (s.publish.empty())
    return fmt::format(
        "source '{}' only receives: it has no publish list. Add '{}' (or a pattern with + or #) to its publish "
        "list to send there",
        source, topic);
  for (const auto& pattern : s.publish)
    if (policy::topicMatches(pattern, topic)) return std::nullopt;
  return fmt::format("source '{}' may not publish on '{}': it is not on the source's publish list ({})", source, topic,
                     joined(s.publish));
}

}  // namespace pine::sources
