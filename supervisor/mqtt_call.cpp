#include "supervisor/mqtt_call.h"

#include <kj/debug.h>
#include <openssl/crypto.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "common/cloexec.h"
#include "common/fd.h"
#include "common/log.h"
#include "common/sha256_hex.h"
#include "config/schema.h"
#include "supervisor/connector_spawn.h"
#include "supervisor/egress_call.h"
#include "supervisor/socket_carrier.h"
#include "supervisor/supervisor.h"

namespace pine {
namespace {

constexpr size_t kMaxCaBytes = 1 << 20;
constexpr size_t kMaxKeptFilters = 1000;  // a session's filters noted, now and before

[[noreturn]] void refuse(const std::string& why) {
  kj::throwFatalException(kj::Exception(kj::Exception::Type::FAILED, __FILE__, __LINE__, kj::str(why)));
}

std::optional<std::string> secretValue(const config::Source& s, const secrets::SecretStore& store, const char* key,
                                       const std::string& name, std::string& out) {
  if (name.empty()) return std::nullopt;
  auto v = store.get(name);
  if (!v)
    return "source '" + s.name + "': its " + key + " names " + name +
           ", which is not in .env: store it with `pinectl secret set " + name + "`";
  out = std::move(*v);
  return std::nullopt;
}

// The broker's end once the job is written: what pined keeps of it is wiped.
struct PendingJob {
  kj::Array<capnp::word> job;
  kj::AutoCloseFd ours;
  kj::Own<kj::AsyncIoStream> writer;
  ~PendingJob() {
    if (job.size() > 0) OPENSSL_cleanse(job.begin(), job.asBytes().size());
  }
};

}  // namespace

std::vector<std::string> mqttFiltersBefore(const std::string& pineHome, const std::string& clientId,
                                           const std::vector<std::string>& now) {
  // In the home, beside .env, where only pined writes: not under data/, which is the broker's
  // (a link planted there would have pined, as root, write and chmod wherever it points).
  const std::string dir = pineHome + "/mqtt-sessions", path = dir + "/" + clientId + ".json";
  std::set<std::string> held(now.begin(), now.end()), before;
  std::vector<std::string> gone;
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    spdlog::warn("cannot make {}: {}; MQTT filters taken out of a source are not unsubscribed", dir, strerror(errno));
    return gone;
  }
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) {
    spdlog::warn("{} is not a folder of pined's own; MQTT filters taken out of a source are not unsubscribed", dir);
    return gone;
  }
  try {
    nlohmann::json saved = nlohmann::json::parse(readFile(path));
    // Only what a configuration could have said, and not more than anyone edits by hand: a broken
    // filter would have the server end every connection at its UNSUBSCRIBE.
    for (const auto& f : saved.at("filters"))
      if (f.is_string() && before.size() < kMaxKeptFilters && config::detail::topicPatternProblem(f, true).empty())
        before.insert(f.get<std::string>());
  } catch (const std::exception&) {
    // None yet (a new source), or unreadable: nothing known to unsubscribe.
  }
  for (const auto& f : before)
    if (!held.count(f)) gone.push_back(f);
  std::set<std::string> all = held;
  all.insert(before.begin(), before.end());
  if (all.size() <= kMaxKeptFilters) held = std::move(all);
  if (held != before) {
    try {
      writeFileAtomic(path, nlohmann::json{{"filters", held}}.dump() + "\n", 0600);
    } catch (const std::exception& e) {
      spdlog::warn("cannot keep the MQTT filters of {} in {}: {}", clientId, path, e.what());
    }
  }
  return gone;
}

std::optional<std::string> mqttJobFor(const config::Source& s, const secrets::SecretStore& store,
                                      const std::string& pineHome, mqtt::JobSpec& job) {
  job.source = s.name;
  if (auto why = mqtt::parseMqttUrl(s.url, job.address)) return "source '" + s.name + "': " + *why;
  // The same id on every start of this source, one per home, whatever its topics: the server keeps
  // the session (what was not acknowledged, what came while pine was away or while a reload
  // changed the topics) for the next pine-mqtt. An id per topic list lost what came between two
  // lists, and a list put back found its old session with everything since queued again. The
  // filters the session had and the source no longer lists are unsubscribed (mqttFiltersBefore).
  // 21 characters of [0-9a-z-], which every MQTT 3.1.1 server must accept.
  job.clientId = "pine-" + sha256Hex(pineHome + "\n" + s.name).substr(0, 16);
  job.topics = s.topics;
  job.unsubscribe = mqttFiltersBefore(pineHome, job.clientId, s.topics);
  job.publish = s.publish;
  if (auto why = secretValue(s, store, "usernameSecret", s.usernameSecret, job.username)) return why;
  if (auto why = secretValue(s, store, "passwordSecret", s.passwordSecret, job.password)) return why;
  if (!s.caFile.empty()) {
    if (!job.address.tls)
      return "source '" + s.name + "': caFile is for an mqtts:// address; " + s.url + " is not encrypted";
    std::string path = s.caFile[0] == '/' ? s.caFile : pineHome + "/" + s.caFile;
    try {
      job.caPem = readFile(path);
    } catch (std::exception& e) {
      return "source '" + s.name + "': cannot read its caFile " + path + ": " + e.what();
    }
    if (job.caPem.empty() || job.caPem.size() > kMaxCaBytes)
      return "source '" + s.name + "': its caFile " + path + " is empty or over 1 MiB";
  }
  return std::nullopt;
}

namespace {

std::string loginPrint(const mqtt::JobSpec& spec) {
  std::string all = spec.username + '\0' + spec.password + '\0' + spec.caPem;
  std::string print = sha256Hex(all);
  OPENSSL_cleanse(all.data(), all.size());
  return print;
}

}  // namespace

void restartMqttWhoseLoginChanged(Supervisor& sup, std::map<std::string, MqttSession>& sessions) {
  auto cfg = sup.config();
  if (!cfg) return;
  for (auto& [name, session] : sessions) {
    if (session.pid == 0) continue;
    std::string now;
    for (const auto& s : cfg->pine.sources) {
      if (s.name != name || s.type != "mqtt") continue;
      mqtt::JobSpec spec;
      if (!mqttJobFor(s, sup.secrets(), sup.home().root, spec)) now = loginPrint(spec);
      OPENSSL_cleanse(spec.password.data(), spec.password.size());
      OPENSSL_cleanse(spec.username.data(), spec.username.size());
    }
    if (now == session.login) continue;
    spdlog::info("mqtt source '{}': its login or CA changed: restarting its connector", name);
    audit("mqtt.restart", {{"source", name}, {"process_pid", session.pid}, {"reason", "login or CA changed"}});
    sup.killChild(session.pid, "mqtt");
    session.pid = 0;
  }
}

kj::Promise<void> openMqtt(
    Supervisor& sup, kj::AsyncIoContext& io, std::map<std::string, MqttSession>& sessions,
    capnp::CallContext<proto::Supervisor::OpenMqttParams, proto::Supervisor::OpenMqttResults> context) {
  const std::string name = context.getParams().getSource();
  KJ_REQUIRE(!name.empty() && name.size() <= 64, "openMqtt: bad source name");
  auto cfg = sup.config();
  KJ_REQUIRE(cfg != nullptr, "openMqtt: no configuration is loaded");
  const config::Source* source = nullptr;
  for (const auto& s : cfg->pine.sources)
    if (s.name == name && s.type == "mqtt") source = &s;
  if (!source) refuse("no mqtt source named '" + name + "' in pine.yaml");

  mqtt::JobSpec spec;
  auto pending = kj::heap<PendingJob>();
  std::string login;
  {
    auto why = mqttJobFor(*source, sup.secrets(), sup.home().root, spec);
    if (!why) pending->job = mqtt::encodeJob(spec);
    if (!why) login = loginPrint(spec);
    OPENSSL_cleanse(spec.password.data(), spec.password.size());
    OPENSSL_cleanse(spec.username.data(), spec.username.size());
    if (why) refuse(*why);
  }

  const std::string program = connectorProgram("pine-mqtt");
  pid_t pid = 0;
  int sv[2];
  if (socketpairCloexec(AF_UNIX, SOCK_STREAM, 0, sv) != 0) refuse(std::string("socketpair: ") + strerror(errno));
  kj::AutoCloseFd ours(sv[0]), theirs(sv[1]);
  try {
    pid = spawnConnector(sup, program, theirs.get(), "mqtt " + name);
  } catch (std::exception& e) {
    // Fail closed: without its sandbox no session runs.
    audit("sandbox.refused", {{"process", "mqtt"}, {"source", name}, {"reason", e.what()}});
    spdlog::error("mqtt source '{}': pine-mqtt not started: {}", name, e.what());
    refuse("source '" + name + "': its MQTT connector could not be started: " + e.what());
  }
  theirs = nullptr;
  sup.adoptChild(pid, "mqtt");
  if (auto old = sessions.find(name); old != sessions.end() && old->second.pid != 0) sup.killChild(old->second.pid, "mqtt");
  sessions[name] = MqttSession{pid, login};
  audit("mqtt.start", {{"source", name}, {"process_pid", pid}, {"url", source->url},
                       {"login", !source->usernameSecret.empty() || !source->passwordSecret.empty()}});
  // The job goes first; only then is the socket the broker's (the bytes travel to pine-mqtt, which
  // the broker's end cannot read back).
  auto& p = *pending;
  p.ours = kj::mv(ours);
  p.writer = io.lowLevelProvider->wrapSocketFd(p.ours.get(), kj::LowLevelAsyncIoProvider::ALREADY_CLOEXEC);
  auto bytes = p.job.asBytes();
  return p.writer->write(bytes.begin(), bytes.size()).then([context, pending = kj::mv(pending)]() mutable {
    pending->writer = nullptr;
    context.getResults().setSession(kj::heap<SocketCarrier>(pending->ours.release()));
  });
}

}  // namespace pine
