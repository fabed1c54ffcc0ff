#include "supervisor/ftp_fetch.h"

#include <dirent.h>
#include <fcntl.h>
#include <kj/debug.h>
#include <kj/io.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "common/log.h"
#include "common/random_bytes.h"
#include "supervisor/egress_call.h"
#include "supervisor/ftp_list.h"
#include "supervisor/supervisor.h"

namespace pine {
namespace {

constexpr const char* kFetching = ".fetching-";  // the temporary name's start

// The file being written: its folder, the temporary name, the bytes so far and their hash.
struct InboxFile {
  kj::AutoCloseFd dir, fd;
  std::string part;
  unsigned long long bytes = 0;
  unsigned long long room = 0;  // what the inbox folder may still take (maxInboxMb)
  std::string full;             // why a file over `room` is not kept
  std::string error;  // a write that failed: the fetch ends with it
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> sha{EVP_MD_CTX_new(), EVP_MD_CTX_free};

  // Not renamed: not kept. At once when the fetch failed (the sink may outlive the call), else at the end.
  void discard() {
    if (dir != nullptr && !part.empty()) unlinkat(dir.get(), part.c_str(), 0);
    part.clear();
  }
  ~InboxFile() { discard(); }
};

class InboxSink final : public proto::ByteSink::Server {
 public:
  explicit InboxSink(std::shared_ptr<InboxFile> file) : file_(kj::mv(file)) {}

 protected:
  kj::Promise<void> write(WriteContext context) override {
    auto chunk = context.getParams().getChunk();
    const kj::byte* at = chunk.begin();
    size_t left = chunk.size();
    if (file_->error.empty() && chunk.size() > file_->room - std::min(file_->room, file_->bytes)) file_->error = file_->full;
    while (left > 0 && file_->error.empty()) {
      ssize_t n = ::write(file_->fd.get(), at, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) file_->error = std::string("writing the file: ") + strerror(n < 0 ? errno : EIO);
      else at += n, left -= (size_t)n;
    }
    KJ_REQUIRE(file_->error.empty(), file_->error);
    EVP_DigestUpdate(file_->sha.get(), chunk.begin(), chunk.size());
    file_->bytes += chunk.size();
    return kj::READY_NOW;
  }

 private:
  std::shared_ptr<InboxFile> file_;
};

// The folder `name` below `parent`, made if absent (as the agent's when pined is root); a link, a
// file or a folder on another device is refused.
kj::AutoCloseFd folderBelow(int parent, const std::string& name, const std::optional<sandbox::SandboxIds>& ids,
                            const std::string& shown) {
  bool made = mkdirat(parent, name.c_str(), 0755) == 0;
  if (!made && errno != EEXIST) throw std::runtime_error(shown + ": cannot create it: " + strerror(errno));
  int fd = openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    throw std::runtime_error(shown + (errno == ELOOP || errno == ENOTDIR ? ": not a folder (a link or a file); nothing was written"
                                                                         : ": " + std::string(strerror(errno))));
  kj::AutoCloseFd out(fd);
  struct stat above, here;
  if (fstat(parent, &above) != 0 || fstat(fd, &here) != 0 || above.st_dev != here.st_dev)
    throw std::runtime_error(shown + ": on another file system (a mount); nothing was written");
  if (made && ids && fchown(fd, ids->uid, ids->gid) != 0)
    throw std::runtime_error(shown + ": cannot hand it to the agent: " + strerror(errno));
  return out;
}

// The bytes of the regular files directly in `dir` but `except` (the copy a fetch replaces). Links and
// folders the agent made there are not counted: only files take the inbox's room. Every other
// file counts, a temporary one a crash of pined left too: a server may name its files as it likes,
// ".fetching-..." included.
unsigned long long filesIn(int dir, const std::string& except) {
  int fd = fcntl(dir, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::string("cannot read the folder: ") + strerror(errno));
  std::unique_ptr<DIR, int (*)(DIR*)> d(fdopendir(fd), closedir);
  if (!d) {
    close(fd);
    throw std::runtime_error(std::string("cannot read the folder: ") + strerror(errno));
  }
  rewinddir(d.get());  // the duplicate shares the offset of a descriptor read before
  unsigned long long sum = 0;
  errno = 0;
  while (dirent* e = readdir(d.get())) {
    struct stat st;
    if (e->d_name == except || fstatat(dirfd(d.get()), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISREG(st.st_mode)) sum += (unsigned long long)st.st_size;
    errno = 0;
  }
  if (errno != 0) throw std::runtime_error(std::string("cannot read the folder: ") + strerror(errno));
  return sum;
}

std::string hex(const unsigned char* p, unsigned n) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < n; ++i) out += {digits[p[i] >> 4], digits[p[i] & 15]};
  return out;
}

template <typename Results>
void refuse(Results res, const std::string& source, const std::string& why) {
  audit("egress.refused", {{"purpose", "source:" + source}, {"reason", why}});
  res.setError(why);
}

}  // namespace

kj::Promise<void> fetchFtpFile(
    Supervisor& sup, EgressProcesses& egress,
    capnp::CallContext<proto::Supervisor::FetchFtpFileParams, proto::Supervisor::FetchFtpFileResults> context) {
  auto p = context.getParams();
  auto source = ftpSourceFor(sup, p.getSource(), p.getFile().size(), "fetchFtpFile");
  const std::string file = p.getFile();
  // The same checks as listFtp's for one file: fetch: true, a plain name (ftp_list.cpp).
  FtpLook look = ftpLook(*source, file);
  if (!look.refused.empty()) {
    refuse(context.getResults(), source->name, source->url + ": " + look.refused);
    return kj::READY_NOW;
  }
  const std::string agent = source->agent.empty() ? "main" : source->agent;
  const std::string shown = "inbox/ftp-" + source->name;
  auto out = std::make_shared<InboxFile>();
  try {
    // Creates the workspace if absent and says whose it is (as root: the agent's own ids).
    sandbox::PreparedSandbox box = sup.prepareAgentSandbox({agent, {}, false, false, {}});
    int ws = open(box.cwd.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (ws < 0) throw std::runtime_error("the workspace of agent '" + agent + "': " + strerror(errno));
    kj::AutoCloseFd workspace(ws);
    kj::AutoCloseFd inbox = folderBelow(workspace.get(), "inbox", box.runAs, "inbox");
    out->dir = folderBelow(inbox.get(), "ftp-" + source->name, box.runAs, shown);
    const unsigned long long cap = (unsigned long long)source->maxInboxMb << 20, held = filesIn(out->dir.get(), file);
    const std::string wait = "; the file waits until files there are moved or deleted (maxInboxMb: " +
                             std::to_string(source->maxInboxMb) + ")";
    if (held >= cap) throw std::runtime_error(shown + " holds " + std::to_string(held) + " bytes, all it may" + wait);
    out->room = cap - held;
    out->full = shown + " would hold more than " + std::to_string(cap) + " bytes with this file" + wait;
    // By the listing's word it does not fit: nothing is fetched (each look would fetch it again).
    if (p.getListedSize() >= 0 && (unsigned long long)p.getListedSize() > out->room) throw std::runtime_error(out->full);
    unsigned char r[8];
    KJ_REQUIRE(randomBytes(r, sizeof r), "no random bytes from the kernel");
    out->part = kFetching + hex(r, sizeof r);
    int fd = openat(out->dir.get(), out->part.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
      out->part.clear();
      throw std::runtime_error(shown + ": cannot create a file there: " + strerror(errno));
    }
    out->fd = kj::AutoCloseFd(fd);
    if (box.runAs && fchown(fd, box.runAs->uid, box.runAs->gid) != 0)
      throw std::runtime_error(shown + ": cannot hand the file to the agent: " + strerror(errno));
    EVP_DigestInit_ex(out->sha.get(), EVP_sha256(), nullptr);
  } catch (std::exception& e) {
    refuse(context.getResults(), source->name, std::string("the file was not fetched: ") + e.what());
    return kj::READY_NOW;
  }
  return egress.run(look.request, kj::mv(look.policy), kj::heap<InboxSink>(out), "source:" + source->name)
      .then([context, out, shown, file](EgressAnswer a) mutable {
        auto res = context.getResults();
        // The sink's own reason first: a full inbox or a failed write ends the transfer with it.
        std::string error = !out->error.empty() ? out->error : a.error;
        if (error.empty() && fsync(out->fd.get()) != 0) error = std::string("writing the file: ") + strerror(errno);
        // Renamed over an older copy (or a link the agent left there: the name is replaced, never followed).
        if (error.empty() && renameat(out->dir.get(), out->part.c_str(), out->dir.get(), file.c_str()) != 0)
          error = shown + "/" + file + ": " + strerror(errno);
        if (!error.empty()) {
          out->discard();
          res.setError("the file was not fetched: " + error);
          return;
        }
        out->part.clear();  // kept
        unsigned char digest[EVP_MAX_MD_SIZE];
        unsigned n = 0;
        EVP_DigestFinal_ex(out->sha.get(), digest, &n);
        res.setPath(shown + "/" + file);
        res.setBytes(out->bytes);
        res.setSha256(hex(digest, n));
      }, [context, out](kj::Exception&& e) mutable {
        out->discard();
        const std::string why = !out->error.empty() ? out->error : e.getDescription().cStr();
        context.getResults().setError("the file was not fetched: " + why);
      });
}

}  // namespace pine
