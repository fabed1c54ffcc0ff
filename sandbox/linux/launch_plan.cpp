#include "sandbox/linux/launch_plan.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "proto/launch.capnp.h"
#include "sandbox/linux/enter.h"

namespace pine::sandbox {
namespace {

[[noreturn]] void sysFail(const char* what) {
  throw std::runtime_error(std::string("the launch plan: ") + what + ": " + strerror(errno));
}

// A string the kernel will read up to its first NUL must hold none.
std::string cString(capnp::Text::Reader t, const char* what) {
  if (strlen(t.cStr()) != t.size())
    throw std::runtime_error(std::string("the launch plan's ") + what + " holds a NUL byte");
  return std::string(t.cStr(), t.size());
}

}  // namespace

int writeLaunchPlan(const LinuxPlan& plan, const LaunchTarget& target) {
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<proto::LaunchPlan>();
  root.setProgram(target.program);
  auto args = root.initArgs((unsigned)target.args.size());
  for (unsigned i = 0; i < args.size(); ++i) args.set(i, target.args[i]);
  auto env = root.initEnv((unsigned)target.env.size());
  for (unsigned i = 0; i < env.size(); ++i) env.set(i, target.env[i]);
  auto sb = root.initSandbox();
  sb.setNewUserNs(plan.newUserNs);
  sb.setNewMountNs(plan.newMountNs);
  sb.setNewNetNs(plan.newNetNs);
  sb.setNewPidNs(plan.newPidNs);
  sb.setNewIpcNs(plan.newIpcNs);
  sb.setMountProc(plan.mountProc);
  sb.setLoopbackUp(plan.loopbackUp);
  sb.setUidMap(plan.uidMap);
  sb.setGidMap(plan.gidMap);
  auto binds = sb.initBinds((unsigned)plan.binds.size());
  for (unsigned i = 0; i < binds.size(); ++i) {
    binds[i].setPath(plan.binds[i].path);
    binds[i].setReadOnly(plan.binds[i].readOnly);
    binds[i].setSource(plan.binds[i].source);
  }
  sb.setChangeIds(plan.changeIds);
  sb.setUid(plan.uid);
  sb.setGid(plan.gid);
  sb.setLastCap(plan.lastCap);
  auto ll = sb.initLandlock();
  ll.setAbi(plan.landlock.abi);
  ll.setHandledFs(plan.landlock.handledFs);
  ll.setHandledNet(plan.landlock.handledNet);
  ll.setScoped(plan.landlock.scoped);
  auto rules = ll.initRules((unsigned)plan.landlock.rules.size());
  for (unsigned i = 0; i < rules.size(); ++i) {
    rules[i].setPath(plan.landlock.rules[i].path);
    rules[i].setAccess(plan.landlock.rules[i].access);
  }
  auto ports = ll.initPortRules((unsigned)plan.landlock.portRules.size());
  for (unsigned i = 0; i < ports.size(); ++i) {
    ports[i].setPort((uint16_t)plan.landlock.portRules[i].port);
    ports[i].setAccess(plan.landlock.portRules[i].access);
  }
  sb.setSeccomp(kj::arrayPtr(reinterpret_cast<const kj::byte*>(plan.seccomp.data()),
                             plan.seccomp.size() * sizeof(sock_filter)));
  sb.setCwd(plan.cwd);

  int memfd = memfd_create("pine-launch-plan", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (memfd < 0) sysFail("memfd_create");
  int fd = fcntl(memfd, F_DUPFD_CLOEXEC, 10);
  int e = errno;
  close(memfd);
  errno = e;
  if (fd < 0) sysFail("fcntl");
  try {
    capnp::writeMessageToFd(fd, message);
  } catch (kj::Exception& ex) {
    close(fd);
    throw std::runtime_error(std::string("the launch plan: write: ") + ex.getDescription().cStr());
  }
  if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
    e = errno;
    close(fd);
    errno = e;
    sysFail("sealing the memfd");
  }
  return fd;
}

LaunchRequest readLaunchPlan(int fd) {
  int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0) sysFail("fd 4 is not a memfd");
  if (!(seals & F_SEAL_WRITE)) throw std::runtime_error("the launch plan's memfd is not sealed against writing");
  if (lseek(fd, 0, SEEK_SET) != 0) sysFail("lseek");
  LaunchRequest out;
  try {
    capnp::StreamFdMessageReader message(fd);
    auto root = message.getRoot<proto::LaunchPlan>();
    out.target.program = cString(root.getProgram(), "program");
    if (out.target.program.empty() || out.target.program[0] != '/')
      throw std::runtime_error("the launch plan's program is not an absolute path");
    for (auto a : root.getArgs()) out.target.args.push_back(cString(a, "argument"));
    if (out.target.args.empty()) throw std::runtime_error("the launch plan has no argv[0]");
    for (auto v : root.getEnv()) out.target.env.push_back(cString(v, "environment"));
    auto sb = root.getSandbox();
    LinuxPlan& p = out.plan;
    p.newUserNs = sb.getNewUserNs();
    p.newMountNs = sb.getNewMountNs();
    p.newNetNs = sb.getNewNetNs();
    p.newPidNs = sb.getNewPidNs();
    p.newIpcNs = sb.getNewIpcNs();
    p.mountProc = sb.getMountProc();
    p.loopbackUp = sb.getLoopbackUp();
    p.uidMap = cString(sb.getUidMap(), "uid map");
    p.gidMap = cString(sb.getGidMap(), "gid map");
    for (auto b : sb.getBinds())
      p.binds.push_back({cString(b.getPath(), "bind path"), b.getReadOnly(), cString(b.getSource(), "mask")});
    p.changeIds = sb.getChangeIds();
    p.uid = sb.getUid();
    p.gid = sb.getGid();
    p.lastCap = sb.getLastCap();
    if (p.lastCap < 0 || p.lastCap > 63) throw std::runtime_error("the launch plan's lastCap is out of range");
    auto ll = sb.getLandlock();
    p.landlock.abi = ll.getAbi();
    p.landlock.handledFs = ll.getHandledFs();
    p.landlock.handledNet = ll.getHandledNet();
    p.landlock.scoped = ll.getScoped();
    for (auto r : ll.getRules()) p.landlock.rules.push_back({cString(r.getPath(), "Landlock path"), r.getAccess()});
    for (auto r : ll.getPortRules()) p.landlock.portRules.push_back({r.getPort(), r.getAccess()});
    auto bpf = sb.getSeccomp();
    if (bpf.size() == 0 || bpf.size() % sizeof(sock_filter) != 0 || bpf.size() / sizeof(sock_filter) > 0xffff)
      throw std::runtime_error("the launch plan's seccomp program is empty or of an odd size");
    p.seccomp.resize(bpf.size() / sizeof(sock_filter));
    memcpy(p.seccomp.data(), bpf.begin(), bpf.size());
    p.cwd = cString(sb.getCwd(), "working directory");
    if (p.cwd.empty() || p.cwd[0] != '/') throw std::runtime_error("the launch plan's cwd is not an absolute path");
  } catch (kj::Exception& e) {
    throw std::runtime_error(std::string("the launch plan does not decode: ") + e.getDescription().cStr());
  }
  return out;
}

std::string describeLaunchReport(const LaunchReport& report) {
  return std::string(launchStageName(report.stage)) + ": " + strerror(report.err);
}

}  // namespace pine::sandbox
