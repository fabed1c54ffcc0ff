@0xa84052b2854029bf;
# Trust boundary: pined (or pinectl) -> pine-launch, over a sealed memfd on the
# launcher's fd 4. One message: what to run and the sandbox to run it in, as
# computed in full by the caller (sandbox/linux/plan.h, LinuxPlan). The launcher
# trusts its starter (it runs with the starter's rights anyway) and decides
# nothing: it carries the plan out (sandbox/linux/enter.h) or reports on fd 5
# which step failed. No field holds a secret.

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("pine::proto");

struct LaunchPlan {
  program @0 :Text;          # absolute path of what to exec once confined
  args @1 :List(Text);       # its argv, argv[0] included
  env @2 :List(Text);        # its whole environment
  sandbox @3 :LinuxSandbox;
}

struct LinuxSandbox {
  newUserNs @0 :Bool;
  newMountNs @1 :Bool;
  newNetNs @2 :Bool;
  newPidNs @3 :Bool;
  newIpcNs @4 :Bool;
  mountProc @5 :Bool;
  loopbackUp @6 :Bool;
  uidMap @7 :Text;           # "uid uid 1\n" for a user namespace
  gidMap @8 :Text;
  binds @9 :List(Bind);      # in order: read-only binds, pins, masks
  changeIds @10 :Bool;       # setgroups/setresgid/setresuid to uid/gid
  uid @11 :UInt32;
  gid @12 :UInt32;
  lastCap @13 :Int32;
  landlock @14 :Landlock;
  seccomp @15 :Data;         # the BPF program, struct sock_filter (8 bytes) after another
  cwd @16 :Text;
}

struct Bind {
  path @0 :Text;
  readOnly @1 :Bool;
  source @2 :Text;           # set: a mask bound over path
}

struct Landlock {
  abi @0 :Int32;             # 0: not applied
  handledFs @1 :UInt64;
  handledNet @2 :UInt64;
  scoped @3 :UInt64;
  rules @4 :List(PathRule);
  portRules @5 :List(PortRule);
}

struct PathRule {
  path @0 :Text;
  access @1 :UInt64;
}

struct PortRule {
  port @0 :UInt16;
  access @1 :UInt64;
}
