#include "tests/sources/mosquitto_fixture.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <mosquitto.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "common/cloexec.h"
#include "common/rpc_link.h"
#include "mqtt/job/mqtt_job.h"
#include "supervisor/mqtt_call.h"

extern char** environ;

namespace sources_test {
namespace {

int freePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) throw std::runtime_error("bind");
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

bool accepts(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

// Runs a program to its end (no shell); throws when it fails.
void runOrThrow(const std::vector<std::string>& argv) {
  pid_t pid = ::fork();
  if (pid == 0) {
    int devnull = ::open("/dev/null", O_WRONLY);
    ::dup2(devnull, 1);
    ::dup2(devnull, 2);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) throw std::runtime_error("failed: " + argv[0] + " " + argv[1]);
}

}  // namespace

void makeCertificates(const std::string& d) {
  const std::string openssl = "/usr/bin/openssl";
  for (const char* ca : {"ca", "other-ca"})
    runOrThrow({openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", d + "/" + ca + ".key", "-out", d + "/" + ca + ".crt", "-days", "2", "-subj",
                std::string("/CN=pine test ") + ca});
  runOrThrow({openssl, "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
              d + "/server.key", "-out", d + "/server.csr", "-subj", "/CN=localhost"});
  std::ofstream(d + "/san.ext") << "subjectAltName=IP:127.0.0.1,DNS:localhost\n";
  runOrThrow({openssl, "x509", "-req", "-in", d + "/server.csr", "-CA", d + "/ca.crt", "-CAkey", d + "/ca.key",
              "-CAcreateserial", "-out", d + "/server.crt", "-days", "2", "-extfile", d + "/san.ext"});
}

Mosquitto::Mosquitto(MosquittoOptions options) : options_(std::move(options)) {
  mosquitto_lib_init();
  char tmpl[] = "/tmp/pine-mosquitto-XXXXXX";
  dir_ = ::mkdtemp(tmpl);
  // Started as root, mosquitto drops to its own user: it must still read its files.
  ::chmod(dir_.c_str(), 0755);
  port_ = freePort();
  std::ofstream conf(dir_ + "/mosquitto.conf");
  conf << "per_listener_settings false\n"
       << "sys_interval 1\n"
       << "persistence false\n"
       << "log_dest none\n";
  if (options_.unboundedQueues) conf << "max_queued_messages 0\nmax_queued_bytes 0\n";
  if (!options_.user.empty()) {
    std::ofstream(dir_ + "/passwd").close();
    runOrThrow({"/usr/bin/mosquitto_passwd", "-b", dir_ + "/passwd", options_.user, options_.password});
    ::chmod((dir_ + "/passwd").c_str(), 0644);
    conf << "allow_anonymous false\npassword_file " << dir_ << "/passwd\n";
  } else {
    conf << "allow_anonymous true\n";
  }
  conf << "listener " << port_ << " 127.0.0.1\n";
  if (options_.tls) {
    makeCertificates(dir_);
    ::chmod((dir_ + "/server.key").c_str(), 0644);
    tlsPort_ = freePort();
    conf << "listener " << tlsPort_ << " 127.0.0.1\n"
         << "cafile " << dir_ << "/ca.crt\ncertfile " << dir_ << "/server.crt\nkeyfile " << dir_ << "/server.key\n";
  }
  conf.close();
  start();
}

Mosquitto::~Mosquitto() {
  stop();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

void Mosquitto::start() {
  std::string conf = dir_ + "/mosquitto.conf";
  pid_ = ::fork();
  if (pid_ == 0) {
    ::execl("/usr/sbin/mosquitto", "mosquitto", "-c", conf.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  for (int i = 0; i < 100; ++i) {
    if (accepts(port_) && (!options_.tls || accepts(tlsPort_))) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  throw std::runtime_error("mosquitto did not start on port " + std::to_string(port_) + "; see " + dir_);
}

void Mosquitto::kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

void Mosquitto::stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

Client::Client(int port, std::vector<std::string> subscribe, const std::string& user, const std::string& password)
    : topics_(std::move(subscribe)) {
  mosq_ = mosquitto_new(nullptr, true, this);
  if (!user.empty()) mosquitto_username_pw_set(mosq_, user.c_str(), password.c_str());
  mosquitto_message_callback_set(mosq_, &Client::onMessage);
  mosquitto_connect_callback_set(mosq_, &Client::onConnect);
  mosquitto_publish_callback_set(mosq_, &Client::onPublish);
  if (mosquitto_connect(mosq_, "127.0.0.1", port, 60) != MOSQ_ERR_SUCCESS)
    throw std::runtime_error("test client cannot connect");
  mosquitto_loop_start(mosq_);
}

Client::~Client() {
  mosquitto_disconnect(mosq_);
  mosquitto_loop_stop(mosq_, false);
  mosquitto_destroy(mosq_);
}

void Client::onConnect(struct mosquitto* mosq, void* self, int rc) {
  if (rc != 0) return;
  for (const auto& t : static_cast<Client*>(self)->topics_) mosquitto_subscribe(mosq, nullptr, t.c_str(), 1);
}

void Client::onMessage(struct mosquitto*, void* selfp, const struct mosquitto_message* m) {
  auto* self = static_cast<Client*>(selfp);
  std::lock_guard<std::mutex> lock(self->mu_);
  self->heard_.emplace_back(m->topic, std::string(static_cast<const char*>(m->payload), m->payloadlen));
}

void Client::onPublish(struct mosquitto*, void* selfp, int mid) {
  auto* self = static_cast<Client*>(selfp);
  std::lock_guard<std::mutex> lock(self->mu_);
  self->acked_.push_back(mid);
}

void Client::publish(const std::string& topic, const std::string& payload, bool retain) {
  mosquitto_publish(mosq_, nullptr, topic.c_str(), static_cast<int>(payload.size()), payload.data(), 1, retain);
}

bool Client::publishAcked(const std::string& topic, const std::string& payload, std::chrono::milliseconds timeout) {
  int mid = 0;
  if (mosquitto_publish(mosq_, &mid, topic.c_str(), static_cast<int>(payload.size()), payload.data(), 1, false) !=
      MOSQ_ERR_SUCCESS)
    return false;
  auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (int m : acked_)
        if (m == mid) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

std::vector<std::pair<std::string, std::string>> Client::heard() {
  std::lock_guard<std::mutex> lock(mu_);
  return heard_;
}

bool Client::waitHeard(const std::function<bool(const std::string&, const std::string&)>& match,
                       std::chrono::milliseconds timeout) {
  auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    for (const auto& [t, p] : heard())
      if (match(t, p)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

void Loop::run(std::chrono::milliseconds ms) {
  io.provider->getTimer().afterDelay(ms.count() * kj::MILLISECONDS).wait(io.waitScope);
}

bool Loop::until(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  auto end = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= end) return false;
    run(std::chrono::milliseconds(20));
  }
  return true;
}

Connectors::Connectors() {
  char tmpl[] = "/tmp/pine-connectors-XXXXXX";
  dir_ = ::mkdtemp(tmpl);
  std::ofstream(dir_ + "/.env").close();
  ::chmod((dir_ + "/.env").c_str(), 0600);
  store_ = std::make_unique<pine::secrets::SecretStore>(dir_ + "/.env");
}

Connectors::~Connectors() {
  // Each ends by itself once its socket is closed; one that does not within 3 s is killed.
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  for (pid_t pid : pids_) {
    int status = 0;
    while (::waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > end) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

void Connectors::setSecret(const std::string& name, const std::string& value) { store_->set(name, value); }

pine::sources::OpenConnector noConnectors() {
  return [](const pine::config::Source& s) -> kj::Promise<kj::Own<kj::AsyncCapabilityStream>> {
    KJ_FAIL_REQUIRE("this test starts no MQTT connector", s.name);
  };
}

pine::sources::OpenConnector Connectors::opener(kj::AsyncIoContext& io) {
  return [this, &io](const pine::config::Source& s) -> kj::Promise<kj::Own<kj::AsyncCapabilityStream>> {
    pine::mqtt::JobSpec spec;
    if (auto why = pine::mqttJobFor(s, *store_, dir_, spec)) throw std::runtime_error(*why);
    spec.reconnectMinMs = 200;
    spec.reconnectMaxMs = 1000;
    auto job = pine::mqtt::encodeJob(spec);
    int sv[2];
    if (pine::socketpairCloexec(AF_UNIX, SOCK_STREAM, 0, sv) != 0) throw std::runtime_error("socketpair");
    const char* bin = std::getenv("PINE_BIN_DIR");
    std::string program = std::string(bin ? bin : "build/bin") + "/pine-mqtt";
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, sv[1], 3);
    char* argv[] = {const_cast<char*>(program.c_str()), nullptr};
    pid_t pid = 0;
    int rc = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(sv[1]);
    if (rc != 0) {
      ::close(sv[0]);
      throw std::runtime_error("cannot start " + program);
    }
    pids_.push_back(pid);
    auto bytes = job.asBytes();
    if (::write(sv[0], bytes.begin(), bytes.size()) != static_cast<ssize_t>(bytes.size()))
      throw std::runtime_error("cannot write the job");
    return pine::wrapSocket(*io.lowLevelProvider, sv[0]);
  };
}

pine::config::Source mqttSource(const std::string& name, const std::string& url, std::vector<std::string> topics,
                                std::vector<std::string> publish) {
  pine::config::Source s;
  s.name = name;
  s.type = "mqtt";
  s.url = url;
  s.topics = std::move(topics);
  s.publish = std::move(publish);
  return s;
}

long peakKb(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  return 0;
}

bool waitSubscribed(Loop& loop, Client& client, const std::string& topic, std::chrono::milliseconds timeout) {
  auto end = std::chrono::steady_clock::now() + timeout;
  auto arrived = [&] {
    for (const auto& d : loop.drafts)
      if (d.topic == topic) return true;
    return false;
  };
  while (std::chrono::steady_clock::now() < end) {
    client.publish(topic, "\"probe\"");
    if (loop.until(arrived, std::chrono::milliseconds(200))) return true;
  }
  return false;
}

}  // namespace sources_test
