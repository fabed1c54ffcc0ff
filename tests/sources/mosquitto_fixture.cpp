#include "tests/sources/mosquitto_fixture.h"

#include <arpa/inet.h>
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

}  // namespace

Mosquitto::Mosquitto() {
  mosquitto_lib_init();
  char tmpl[] = "/tmp/pine-mosquitto-XXXXXX";
  dir_ = ::mkdtemp(tmpl);
  port_ = freePort();
  std::ofstream(dir_ + "/mosquitto.conf") << "listener " << port_ << " 127.0.0.1\n"
                                          << "allow_anonymous true\n"
                                          << "sys_interval 1\n"
                                          << "persistence false\n"
                                          << "log_dest none\n";
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
    if (accepts(port_)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  throw std::runtime_error("mosquitto did not start on port " + std::to_string(port_) + "; see " + dir_);
}

void Mosquitto::stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

Client::Client(int port, std::vector<std::string> subscribe) : topics_(std::move(subscribe)) {
  mosq_ = mosquitto_new(nullptr, true, this);
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
