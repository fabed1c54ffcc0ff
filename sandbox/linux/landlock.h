// Landlock: the filesystem (and, from ABI 4, TCP) part of the Linux backend.
// Debian 12's <linux/landlock.h> stops at ABI 1's rights while kernels here
// report ABI 7, so the constants and structures of later ABIs are defined
// below from the kernel's UAPI (include/uapi/linux/landlock.h), under our own
// names so they never clash with a newer header.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sandbox/policy.h"

namespace pine::sandbox::landlock {

// Filesystem rights (bit numbers are the kernel's).
constexpr uint64_t kExecute = 1ULL << 0;
constexpr uint64_t kWriteFile = 1ULL << 1;
constexpr uint64_t kReadFile = 1ULL << 2;
constexpr uint64_t kReadDir = 1ULL << 3;
constexpr uint64_t kRemoveDir = 1ULL << 4;
constexpr uint64_t kRemoveFile = 1ULL << 5;
constexpr uint64_t kMakeChar = 1ULL << 6;
constexpr uint64_t kMakeDir = 1ULL << 7;
constexpr uint64_t kMakeReg = 1ULL << 8;
constexpr uint64_t kMakeSock = 1ULL << 9;
constexpr uint64_t kMakeFifo = 1ULL << 10;
constexpr uint64_t kMakeBlock = 1ULL << 11;
constexpr uint64_t kMakeSym = 1ULL << 12;
constexpr uint64_t kRefer = 1ULL << 13;     // ABI 2
constexpr uint64_t kTruncate = 1ULL << 14;  // ABI 3
constexpr uint64_t kIoctlDev = 1ULL << 15;  // ABI 5
// Network rights (ABI 4).
constexpr uint64_t kNetBindTcp = 1ULL << 0;
constexpr uint64_t kNetConnectTcp = 1ULL << 1;
// Scopes (ABI 6).
constexpr uint64_t kScopeAbstractUnix = 1ULL << 0;
constexpr uint64_t kScopeSignal = 1ULL << 1;

// Rights that mean something on a file that is not a directory.
constexpr uint64_t kFileRights = kExecute | kWriteFile | kReadFile | kTruncate | kIoctlDev;
constexpr uint64_t kRead = kExecute | kReadFile | kReadDir;
// What "writable" grants. Device nodes and sockets are never made (mknod needs
// a capability anyway; socket() is refused by seccomp), ioctl on devices is
// for the few device files the policy lists.
constexpr uint64_t kWrite = kWriteFile | kRemoveDir | kRemoveFile | kMakeDir | kMakeReg | kMakeFifo | kMakeSym |
                            kRefer | kTruncate;

uint64_t handledFs(int abi);   // every filesystem right the ABI knows: unlisted means denied
uint64_t handledNet(int abi);  // TCP bind/connect from ABI 4, else 0
uint64_t scopes(int abi);      // abstract unix sockets and signals from ABI 6, else 0

// The highest ABI the kernel supports, 0 when Landlock is unavailable.
int kernelAbi() noexcept;

struct Rule {
  std::string path;
  uint64_t access;  // already masked to the ABI and to the file's type
};

// Turns allow trees and deny carve-outs into Landlock rules: readable trees get
// read rights (and execute, unless policy.execOnly), writable ones kWrite too,
// policy.executable files execute and read, the folders of
// policy.listenSockets kMakeSock.
// Landlock only adds
// rights along a path, so a deny inside an allowed tree is made by replacing
// the tree's rule with a narrower one plus a full rule for every sibling on the
// way down to the denied path (see README: files created later next to a
// denied path get the narrower rights).
// denyRead removes every right; denyWrite removes the writing ones.
// `denyWriteSkip`, `denyReadSkip`: paths enforced another way (read-only bind mounts, masks).
std::vector<Rule> computeRules(const Policy& policy, int abi, const std::vector<std::string>& denyWriteSkip,
                               const std::vector<std::string>& denyReadSkip = {});

struct PortRule {
  uint64_t port;
  uint64_t access;  // kNetBindTcp and/or kNetConnectTcp
};

// With policy.tcpPortsOnly: the ports that may be bound and connected to (ABI 4 and later, else none).
std::vector<PortRule> computePortRules(const Policy& policy, int abi);

// The Landlock part of a LinuxPlan, applied in the sandboxed process before it execs.
struct ChildPlan {
  int abi = 0;  // 0: Landlock is not applied
  uint64_t handledFs = 0;
  uint64_t handledNet = 0;  // network none: TCP bind/connect handled and never allowed; tcpPortsOnly: per port
  uint64_t scoped = 0;
  std::vector<Rule> rules;
  std::vector<PortRule> portRules;
};

// Creates the ruleset, adds the rules and restricts the calling thread.
// Async-signal-safe and allocation-free. Returns 0 or an errno value.
int restrictSelf(const ChildPlan& plan) noexcept;

}  // namespace pine::sandbox::landlock
