// The macOS sandbox host (sandbox_host.h): Seatbelt profiles that /usr/bin/sandbox-exec applies.
// Written for macOS, not compiled on a Mac here. pined runs there as its service account, never
// as root: sandbox-exec changes no uid, so as root every child would be root too, and the host
// refuses. pined checks at start that sandbox-exec exists and accepts pine's profiles
// (supervisor/backend_check.h).
#include <unistd.h>

#include <stdexcept>

#include "sandbox/sandbox_host.h"

namespace pine::sandbox {
namespace {

const char kAsRoot[] =
    "pined runs as root, and on macOS every program it starts would too (sandbox-exec keeps the uid): run it "
    "as its service account (scripts/service/install-macos)";

class SeatbeltHost final : public SandboxHost {
 public:
  explicit SeatbeltHost(SandboxOptions options) : options_(options) {}

  Backend backend() const override { return Backend::Seatbelt; }
  bool root() const override { return geteuid() == 0; }

  HostFacts facts() const override {
    HostFacts f;
    f.backend = "seatbelt";
    f.description = "Seatbelt: a profile for each program, applied by /usr/bin/sandbox-exec";
    if (root()) f.refused = kAsRoot;
    return f;
  }

  void requireUsable() const override {
    if (root()) throw std::runtime_error(kAsRoot);
  }

  SandboxIds agentIds(const std::string&, const std::string&) const override {
    return {options_.workerUid, options_.workerGid};  // unused: never root (requireUsable)
  }
  void handOverAgentFolders(const std::string&, const std::vector<std::string>&, const std::vector<std::string>&,
                            SandboxIds) const override {}
  // The profile keeps instruction files and git's settings read-only by name, whether they exist
  // or not (protectInstructionFiles, protectGitControl): nothing to make before, nothing to undo after.
  void createMissingFiles(const std::string&, const std::string&, const std::vector<std::string>&,
                          SandboxIds) const override {}
  std::shared_ptr<const TaintedRun> watchTaintedRun(const std::vector<std::string>&,
                                                    std::optional<SandboxIds>) const override {
    return nullptr;
  }

  void launch(PreparedSandbox& box, const LaunchParams& request) const override { seatbeltLaunch(box, request); }

  void shareHomeWithBroker(const std::string&, SandboxIds) const override {}
  std::string untraversableReason(const std::string&, SandboxIds) const override { return ""; }

 private:
  SandboxOptions options_;
};

}  // namespace

std::shared_ptr<const SandboxHost> makeSandboxHost(Backend backend, const SandboxOptions& options) {
  if (backend != Backend::Seatbelt)
    throw std::runtime_error(std::string("the ") + backendName(backend) + " sandbox backend is not built on macOS");
  return std::make_shared<const SeatbeltHost>(options);
}

SandboxIds pickBrokerIds(uid_t, uid_t, const std::string&) { throw std::runtime_error(kAsRoot); }

}  // namespace pine::sandbox
