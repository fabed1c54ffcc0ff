// The plan's way to pine-launch (sandbox/linux/launch_plan.h): every field
// survives the trip, and what the launcher would hand the kernel is checked.
#include <doctest/doctest.h>
#include <capnp/message.h>
#include <capnp/serialize.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <stdexcept>
#include <string>

#include "proto/launch.capnp.h"
#include "sandbox/linux/launch_plan.h"

using namespace pine::sandbox;

namespace {

LinuxPlan samplePlan() {
  LinuxPlan p;
  p.newUserNs = true;
  p.newMountNs = true;
  p.newNetNs = false;
  p.newPidNs = true;
  p.newIpcNs = true;
  p.mountProc = true;
  p.loopbackUp = true;
  p.uidMap = "1000 1000 1\n";
  p.gidMap = "1000 1000 1\n";
  p.binds = {{"/w/.git/hooks", true, ""}, {"/w/.git", false, ""}, {"/etc/shadow", true, "/h/sandbox/.mask-file"}};
  p.changeIds = true;
  p.uid = 60601;
  p.gid = 60601;
  p.lastCap = 40;
  p.landlock.abi = 6;
  p.landlock.handledFs = 0xffff;
  p.landlock.handledNet = 3;
  p.landlock.scoped = 3;
  p.landlock.rules = {{"/usr", 0x9}, {"/h/data", 0x7fff}};
  p.landlock.portRules = {{7433, 1}, {1883, 2}};
  p.seccomp = {{0x20, 0, 0, 4}, {0x06, 0, 0, 0x7fff0000}};
  p.cwd = "/h/data";
  p.notes = {"not sent"};
  return p;
}

// A message of our own making, in a memfd sealed (or not) as writeLaunchPlan seals it.
int messageFd(capnp::MessageBuilder& message, bool seal = true) {
  int fd = memfd_create("test-plan", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  REQUIRE(fd >= 0);
  capnp::writeMessageToFd(fd, message);
  if (seal) REQUIRE(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) == 0);
  return fd;
}

// A valid message, edited by `edit`, then read back: the error's text, or "" when it was accepted.
template <class Edit>
std::string readEdited(Edit edit) {
  int good = writeLaunchPlan(samplePlan(), {"/bin/true", {"true"}, {"PATH=/bin"}});
  lseek(good, 0, SEEK_SET);
  capnp::StreamFdMessageReader reader(good);
  capnp::MallocMessageBuilder copy;
  copy.setRoot(reader.getRoot<pine::proto::LaunchPlan>());
  close(good);
  edit(copy.getRoot<pine::proto::LaunchPlan>());
  int fd = messageFd(copy);
  try {
    readLaunchPlan(fd);
    close(fd);
    return "";
  } catch (const std::runtime_error& e) {
    close(fd);
    return e.what();
  }
}

}  // namespace

TEST_CASE("a plan survives the trip to pine-launch, field for field (notes stay behind)") {
  LinuxPlan p = samplePlan();
  LaunchTarget target{"/usr/bin/pine-worker", {"pine-worker", "--task", "t-1"}, {"PATH=/usr/bin", "LANG=C.UTF-8"}};
  int fd = writeLaunchPlan(p, target);
  CHECK(fd >= 10);
  CHECK((fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
  CHECK((fcntl(fd, F_GET_SEALS) & F_SEAL_WRITE) != 0);
  CHECK(write(fd, "x", 1) < 0);  // sealed: no one changes the plan after pined made it
  LaunchRequest r = readLaunchPlan(fd);
  close(fd);
  CHECK(r.target.program == target.program);
  CHECK(r.target.args == target.args);
  CHECK(r.target.env == target.env);
  const LinuxPlan& q = r.plan;
  CHECK(q.newUserNs == p.newUserNs);
  CHECK(q.newMountNs == p.newMountNs);
  CHECK(q.newNetNs == p.newNetNs);
  CHECK(q.newPidNs == p.newPidNs);
  CHECK(q.newIpcNs == p.newIpcNs);
  CHECK(q.mountProc == p.mountProc);
  CHECK(q.loopbackUp == p.loopbackUp);
  CHECK(q.uidMap == p.uidMap);
  CHECK(q.gidMap == p.gidMap);
  REQUIRE(q.binds.size() == p.binds.size());
  for (size_t i = 0; i < q.binds.size(); ++i) {
    CHECK(q.binds[i].path == p.binds[i].path);
    CHECK(q.binds[i].readOnly == p.binds[i].readOnly);
    CHECK(q.binds[i].source == p.binds[i].source);
  }
  CHECK(q.changeIds == p.changeIds);
  CHECK(q.uid == p.uid);
  CHECK(q.gid == p.gid);
  CHECK(q.lastCap == p.lastCap);
  CHECK(q.landlock.abi == p.landlock.abi);
  CHECK(q.landlock.handledFs == p.landlock.handledFs);
  CHECK(q.landlock.handledNet == p.landlock.handledNet);
  CHECK(q.landlock.scoped == p.landlock.scoped);
  REQUIRE(q.landlock.rules.size() == 2);
  CHECK(q.landlock.rules[1].path == "/h/data");
  CHECK(q.landlock.rules[1].access == 0x7fff);
  REQUIRE(q.landlock.portRules.size() == 2);
  CHECK(q.landlock.portRules[0].port == 7433);
  CHECK(q.landlock.portRules[1].access == 2);
  REQUIRE(q.seccomp.size() == 2);
  CHECK(q.seccomp[1].k == 0x7fff0000U);
  CHECK(q.cwd == p.cwd);
  CHECK(q.notes.empty());
}

TEST_CASE("pine-launch refuses a plan that is unsealed, garbled, or would hand the kernel something odd") {
  // The legitimate twin first: an unedited copy is accepted.
  CHECK(readEdited([](auto) {}) == "");
  CHECK(readEdited([](auto r) { r.setProgram("bin/true"); }).find("absolute") != std::string::npos);
  CHECK(readEdited([](auto r) { r.setProgram(kj::StringPtr("/bin/true\0/evil", 15)); }).find("NUL") !=
        std::string::npos);
  CHECK(readEdited([](auto r) { r.initArgs(0); }).find("argv[0]") != std::string::npos);
  CHECK(readEdited([](auto r) { r.getEnv().set(0, kj::StringPtr("A=1\0B=2", 7)); }).find("NUL") != std::string::npos);
  CHECK(readEdited([](auto r) { r.getSandbox().setCwd("relative"); }).find("cwd") != std::string::npos);
  CHECK(readEdited([](auto r) {
          kj::byte odd[5] = {};
          r.getSandbox().setSeccomp(kj::arrayPtr(odd, 5));
        }).find("seccomp") != std::string::npos);
  CHECK(readEdited([](auto r) { r.getSandbox().initSeccomp(0); }).find("seccomp") != std::string::npos);
  CHECK(readEdited([](auto r) { r.getSandbox().getLandlock().getRules()[0].setPath(kj::StringPtr("/u\0x", 4)); })
            .find("NUL") != std::string::npos);
  CHECK(readEdited([](auto r) { r.getSandbox().setLastCap(99); }).find("lastCap") != std::string::npos);

  // Not sealed against writing: someone could still change it.
  capnp::MallocMessageBuilder m;
  m.initRoot<pine::proto::LaunchPlan>();
  int unsealed = messageFd(m, false);
  CHECK_THROWS_WITH_AS(readLaunchPlan(unsealed), doctest::Contains("not sealed"), std::runtime_error);
  close(unsealed);
  // Not a message at all.
  int junk = memfd_create("junk", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  REQUIRE(write(junk, "\xff\xff\xff\xff garbage", 12) == 12);
  REQUIRE(fcntl(junk, F_ADD_SEALS, F_SEAL_WRITE) == 0);
  CHECK_THROWS_AS(readLaunchPlan(junk), std::runtime_error);
  close(junk);
  // Not a memfd: a pipe has no seals.
  int p[2];
  REQUIRE(pipe(p) == 0);
  CHECK_THROWS_WITH_AS(readLaunchPlan(p[0]), doctest::Contains("memfd"), std::runtime_error);
  close(p[0]);
  close(p[1]);
}
