// The openMqtt method of the Supervisor capability: a pine-mqtt process for one mqtt source.
// The broker names the source; pined looks it up in its own configuration, reads the values
// of its usernameSecret and passwordSecret from .env and its caFile, starts pine-mqtt by exec
// inside the egress sandbox (network, no home, no .env, nothing written), writes the job on
// the socketpair and hands the other end to the broker. pined never reads MQTT bytes: after
// the job the socket is the broker's and the process's alone.
#pragma once
#include <kj/async-io.h>

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>

#include "config/model.h"
#include "mqtt/job/mqtt_job.h"
#include "proto/supervisor.capnp.h"
#include "supervisor/secrets/secret_store.h"

namespace pine {

class Supervisor;

// A running pine-mqtt, and a fingerprint (SHA-256) of the login values and CA it was given.
struct MqttSession {
  pid_t pid = 0;
  std::string login;
};

// `sessions`: the pine-mqtt of each source this broker connection opened; one asked for again
// replaces it (the old one is killed), so the broker cannot pile up sessions of a source.
kj::Promise<void> openMqtt(
    Supervisor& sup, kj::AsyncIoContext& io, std::map<std::string, MqttSession>& sessions,
    capnp::CallContext<proto::Supervisor::OpenMqttParams, proto::Supervisor::OpenMqttResults> context);

// After .env or a CA file may have changed (pinectl secret set, an owner's reload): each session
// whose login values or CA differ from what it was started with is stopped; the broker opens it
// again, and pined starts it with the values now in force (a refused one then says why).
void restartMqttWhoseLoginChanged(Supervisor& sup, std::map<std::string, MqttSession>& sessions);

// The job for source `s`: its address and lists, the values of its secrets, its CA file's bytes
// (a relative caFile is in pine's home). Error text that names what is missing and how to fix
// it, never a value; `job` is then incomplete.
std::optional<std::string> mqttJobFor(const config::Source& s, const secrets::SecretStore& store,
                                      const std::string& pineHome, mqtt::JobSpec& job);

// The topic filters the MQTT session of `clientId` was given before and `now` does not list (to be
// unsubscribed), from mqtt-sessions/<clientId>.json in pine's home, which then lists every filter
// the session may hold (those and `now`; at most 1000, each one a configuration could name).
// Empty when the file cannot be read; a failure to write it is logged (a filter dropped later then
// stays subscribed, and its messages are dropped by the broker's topic check).
std::vector<std::string> mqttFiltersBefore(const std::string& pineHome, const std::string& clientId,
                                           const std::vector<std::string>& now);

}  // namespace pine
