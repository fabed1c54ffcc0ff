// What pined's command line says about sandboxes whatever the backend, the ids a sandboxed
// program runs as when pined runs as root, and how pined picks the broker's at start. A header
// of plain types: the Linux backend (linux/plan.h, linux/broker_home.h) and the platform-neutral
// sandbox_host.h both build on it.
#pragma once
#include <sys/types.h>

#include <string>

namespace pine::sandbox {

struct SandboxIds {
  uid_t uid;
  gid_t gid;  // the same number
};

// What pined's command line says about sandboxes, whatever the backend.
struct SandboxOptions {
  // When pined runs as root, the sandboxed process runs as this uid/gid with no
  // supplementary groups (a worker: its agent's own ids, see workerIdFirst; the broker:
  // its own ids, see brokerIdFirst; pine-egress: this default, nobody). Ignored otherwise:
  // an unprivileged pined's children keep its uid, inside a user namespace where available.
  uid_t workerUid = 65534;
  gid_t workerGid = 65534;
  // When pined runs as root: the range each agent's own worker uid (and gid, the same
  // number) is taken from (sandbox/linux/agent_ids.h).
  uid_t workerIdFirst = 60700;
  uid_t workerIdLast = 60999;
  // When pined runs as root: the range the broker's own uid (and gid, the same
  // number) is taken from, the first one no account and no process uses.
  uid_t brokerIdFirst = 60600;
  uid_t brokerIdLast = 60699;
  int minLandlockAbi = 1;          // Linux: refuse below this
  bool requireNamespaces = false;  // Linux: refuse a degraded backend
};

// As root, at pined's start: the broker's own ids, the first in [first, last] that no account or
// group names (getpwuid, getgrgid) and no process runs as; the current owner of `dataDir` comes
// first when it is in the range, so that a restart keeps the broker's uid. Throws
// std::runtime_error saying which range to widen.
// Linux: sandbox/linux/broker_home.cpp; macOS: seatbelt/seatbelt_host_macos.cpp (refuses).
SandboxIds pickBrokerIds(uid_t first, uid_t last, const std::string& dataDir);

}  // namespace pine::sandbox
