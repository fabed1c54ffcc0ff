#include "broker/sources/source_manager.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <tuple>

#include "broker/policy/topics.h"
#include "broker/sources/payload.h"
#include "broker/sources/source_kinds.h"

namespace pine::sources {
namespace {

// What a running connection depends on: a change to any of these restarts it.
bool sameConnection(const config::Source& a, const config::Source& b) {
  return std::tie(a.type, a.url, a.topics, a.publish, a.usernameSecret, a.passwordSecret, a.caFile, a.trust) ==
         std::tie(b.type, b.url, b.topics, b.publish, b.usernameSecret, b.passwordSecret, b.caFile, b.trust);
}

// What a running command source depends on: a change restarts it.
bool sameCommand(const config::Source& a, const config::Source& b) {
  return std::tie(a.type, a.command, a.commandMode, a.intervalSec, a.timeoutSec, a.agent, a.trust) ==
         std::tie(b.type, b.command, b.commandMode, b.intervalSec, b.timeoutSec, b.agent, b.trust);
}

// What a running folder source depends on.
bool sameFolder(const config::Source& a, const config::Source& b) {
  return std::tie(a.path, a.recursive, a.debounceMs, a.trust) == std::tie(b.path, b.recursive, b.debounceMs, b.trust);
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

kj::Promise<std::optional<std::string>> answer(std::string why) {
  return std::optional<std::string>(std::move(why));
}

}  // namespace

SourceManager::SourceManager(kj::AsyncIoContext& io, Sink sink, OpenConnector open, Options options)
    : io_(io),
      sink_(std::move(sink)),
      open_(std::move(open)),
      options_(options),
      polls_(io.provider->getTimer(), options_.http),
      ftpPolls_(io.provider->getTimer(), options_.ftp) {}

SourceManager::~SourceManager() {
  links_.clear();
  commands_.clear();
  folders_.clear();
  programs_.clear();
}

void SourceManager::refuse(const config::Source& s, std::string reason) {
  auto it = refused_.find(s.name);
  bool known = it != refused_.end() && sameConnection(it->second.source, s) && it->second.reason == reason;
  if (!known) spdlog::warn("{}", reason);  // once per configuration, not on every update
  refused_[s.name] = Refused{s, std::move(reason)};
}

std::optional<std::string> SourceManager::whyNotStartable(const config::Source& s) const {
  // Every other type that runs was started above; what reaches here has no way to run in this broker
  // (an http or ftp source without pined's services to poll through, a telegram channel).
  if (s.type != "mqtt")
    return fmt::format("source '{}': a source of type '{}' cannot run here (nothing to run it through); it is not started",
                       s.name, s.type);
  // The address is parsed again where the session runs; the broker only turns away what never runs.
  if (s.url.find('@') != std::string::npos)
    return fmt::format(
        "source '{}': the MQTT address holds credentials; it is not started. Remove them and name .env entries in "
        "usernameSecret/passwordSecret",
        s.name);
  return std::nullopt;
}

void SourceManager::update(const std::vector<config::Source>& wanted) {
  std::map<std::string, const config::Source*> byName;
  for (const auto& s : wanted) byName[s.name] = &s;

  for (auto it = links_.begin(); it != links_.end();) {
    auto w = byName.find(it->first);
    if (w == byName.end()) {
      spdlog::info("source '{}': stopped, nobody wants it any more", it->first);
      it = links_.erase(it);
    } else if (!sameConnection(it->second->source(), *w->second)) {
      spdlog::info("source '{}': configuration changed, restarting it", it->first);
      it = links_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = commands_.begin(); it != commands_.end();) {
    auto w = byName.find(it->first);
    bool same = w != byName.end() && sameCommand(it->second->source(), *w->second);
    if (!same) spdlog::info("source '{}': {}, its command stopped", it->first, w == byName.end() ? "nobody wants it any more" : "configuration changed");
    it = same ? std::next(it) : commands_.erase(it);
  }
  for (auto it = folders_.begin(); it != folders_.end();) {
    auto w = byName.find(it->first);
    if (w == byName.end() || !sameFolder(it->second->source(), *w->second)) {
      spdlog::info("source '{}': stopped, {}", it->first,
                   w == byName.end() ? "nobody wants it any more" : "its configuration changed (restarting it)");
      it = folders_.erase(it);
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
  polls_.update(wanted);
  ftpPolls_.update(wanted);

  for (const auto& s : wanted) {
    if (links_.count(s.name) || folders_.count(s.name)) continue;
    if (s.type == "webhook") continue;  // served by the control API at /hooks/<name> (hook_intake)
    if (s.type == "http" && options_.http) continue;  // polled by polls_ (http_poller.h)
    if (s.type == "ftp" && options_.ftp) continue;    // listed by ftpPolls_ (ftp_poller.h)
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
    if (s.type == "folder") {
      startFolder(s);
      continue;
    }
    if (s.type == "command") {
      if (commands_.count(s.name)) continue;
      if (!options_.startCommand) {
        refuse(s, fmt::format("source '{}': commands cannot be run here (no supervisor); it is not started", s.name));
        continue;
      }
      refused_.erase(s.name);
      commands_[s.name] = std::make_unique<CommandSource>(io_, s, options_.startCommand, sink_, options_.status,
                                                          options_.commandLimits);
      continue;
    }
    if (auto why = whyNotStartable(s)) {
      refuse(s, std::move(*why));
      continue;
    }
    refused_.erase(s.name);
    spdlog::info("source '{}': starting its MQTT connector ({}, topics {})", s.name, s.url, joined(s.topics));
    links_[s.name] = std::make_unique<MqttLink>(io_, s, sink_, open_, options_.restart, options_.memory);
  }
}

bool SourceManager::startFolder(const config::Source& s) {
  if (!options_.memory) {
    refuse(s, fmt::format("source '{}': folder sources need the broker's store to remember what they reported; it "
                          "is not started",
                          s.name));
    return false;
  }
  // Handed on directly: a folder source runs on this thread, not behind the inbox.
  auto folder = std::make_unique<FolderSource>(io_, s, options_.memory, sink_, options_.folder);
  if (auto why = folder->start()) {
    refuse(s, std::move(*why));
    return false;
  }
  refused_.erase(s.name);
  spdlog::info("source '{}': started (folder {}{}, settles after {} ms)", s.name, s.path,
               s.recursive ? " and its sub-folders" : "", s.debounceMs);
  folders_[s.name] = std::move(folder);
  return true;
}

std::vector<std::string> SourceManager::starting() const {
  std::vector<std::string> out;
  for (const auto& [name, link] : links_)
    if (link->starting()) out.push_back(name);
  return out;
}

std::vector<std::string> SourceManager::running() const {
  std::vector<std::string> out;
  for (const auto& [name, link] : links_)
    if (link->running()) out.push_back(name);
  for (auto& name : polls_.names()) out.push_back(name);
  for (auto& name : ftpPolls_.names()) out.push_back(name);
  for (const auto& [name, command] : commands_)
    if (!command->notRunning()) out.push_back(name);
  for (const auto& [name, folder] : folders_) out.push_back(name);
  for (const auto& [name, program] : programs_)
    if (!program->whyNotRunning()) out.push_back(name);
  std::sort(out.begin(), out.end());
  return out;
}

std::map<std::string, std::string> SourceManager::notRunning() const {
  std::map<std::string, std::string> out;
  for (const auto& [name, r] : refused_) out[name] = r.reason;
  for (const auto& [name, link] : links_)
    if (!link->running()) out[name] = link->reason();
  for (const auto& [name, command] : commands_)
    if (command->notRunning()) out[name] = *command->notRunning();
  for (const auto& [name, program] : programs_)
    if (auto why = program->whyNotRunning()) out[name] = *why;
  return out;
}

kj::Promise<std::optional<std::string>> SourceManager::publish(const std::string& source, const std::string& topic,
                                                               const std::string& payload) {
  if (polls_.has(source)) return answer(fmt::format("source '{}' is an http source: it only receives", source));
  if (ftpPolls_.has(source)) return answer(fmt::format("source '{}' is an ftp source: it only receives", source));
  if (commands_.count(source))
    return answer(
        fmt::format("source '{}' is a command: it only brings events in, nothing is published through it", source));
  if (folders_.count(source)) return answer(fmt::format("source '{}' is a folder: it only receives", source));
  if (auto p = programs_.find(source); p != programs_.end()) {
    if (auto why = checkPublish(p->second->source(), topic, payload)) return answer(std::move(*why));
    return p->second->publish(topic, payload);
  }
  auto it = links_.find(source);
  if (it == links_.end()) {
    auto r = refused_.find(source);
    if (r != refused_.end()) return answer("cannot publish through " + r->second.reason);
    return answer(fmt::format(
        "no running source named '{}': a source runs only while a subscription or a route names it, or with "
        "start: always",
        source));
  }
  if (auto why = checkPublish(it->second->source(), topic, payload)) return answer(std::move(*why));
  return it->second->publish(topic, payload);
}

std::optional<std::string> SourceManager::checkPublish(const config::Source& s, const std::string& topic,
                                                       const std::string& payload) const {
  const std::string& source = s.name;
  if (auto why = policy::validateTopic(topic))
    return fmt::format("source '{}' cannot publish on '{}': {}", source, topic, *why);
  if (s.publish.empty())
    return fmt::format(
        "source '{}' only receives: it has no publish list. Add '{}' (or a pattern with + or #) to its publish "
        "list to send there",
        source, topic);
  if (payload.size() > kMaxPayloadBytes)
    return fmt::format("source '{}': the message is {} bytes, more than the {} a source carries", source,
                       payload.size(), kMaxPayloadBytes);
  for (const auto& pattern : s.publish)
    if (policy::topicMatches(pattern, topic)) return std::nullopt;
  return fmt::format("source '{}' may not publish on '{}': it is not on the source's publish list ({})", source, topic,
                     joined(s.publish));
}

}  // namespace pine::sources
