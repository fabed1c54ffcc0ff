@0xc4d502ab3f5a995a;
# Trust boundary: pine-worker (assumed hostile) -> pine-broker.
#
# The broker serves one `Broker` per worker socket, built for that worker's task:
# who the worker is comes from the socket it spoke on, never from what it says.
# A worker whose profile may not use a capability does not receive it at all.

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("pine::proto");

interface Broker {
  getTask @0 () -> (task :Task);
  # The one task this worker runs; the same answer every time it is asked.

  finish @1 (answer :Text) -> ();
  # Hand back the task's answer (at most 1 MiB); the task ends done and the worker should exit.

  fail @2 (reason :Text) -> ();
  # The worker could not do its task (reason at most 4 KiB); the task ends failed.

  ping @3 () -> ();
  # Liveness check; answers at once and changes nothing.
}

struct Task {
  id @0 :Text;
  agent @1 :Text;
  text @2 :Text;      # what the owner or the event asked for
  sandbox @3 :Text;   # the sandbox the supervisor started this worker in ("none" until it lands)
}
