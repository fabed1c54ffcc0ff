#include "supervisor/ftp_list.h"

#include <kj/debug.h>

#include <cctype>

#include "common/log.h"
#include "supervisor/egress_call.h"
#include "supervisor/supervisor.h"

namespace pine {
namespace {

constexpr size_t kMaxListing = 4 << 20;  // a listing larger than this is an error (about 10,000 entries and more)
constexpr size_t kMaxName = 255;

// A name the broker read from a listing: one plain name in the folder, nothing that leaves it.
std::string nameProblem(const std::string& name) {
  if (name.empty() || name.size() > kMaxName) return "a file name is empty or over 255 bytes";
  if (name == "." || name == "..") return "'.' and '..' are not files";
  for (unsigned char c : name)
    if (c < 0x20 || c == 0x7f || c == '/' || c == '\\') return "a file name with '/', '\\' or a control character";
  // "${" is not refused: a name goes into the URL percent-encoded (below), where it can never read
  // as a placeholder, and the broker lists such a file like any other ("report ${date}.txt").
  return {};
}

std::string percentEncoded(const std::string& name) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : name) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') out += (char)c;
    else out += {'%', hex[c >> 4], hex[c & 15]};
  }
  return out;
}

}  // namespace

FtpLook ftpLook(const config::Source& s, const std::string& file) {
  FtpLook out;
  if (!file.empty()) {
    if (!s.fetch) {
      out.refused = "source '" + s.name + "' does not fetch files (fetch: false)";
      return out;
    }
    if (std::string why = nameProblem(file); !why.empty()) {
      out.refused = why;
      return out;
    }
  }
  // config/schema.cpp checked the shape: scheme://host[:port][/dir/], no userinfo, no placeholder.
  const size_t sep = s.url.find("://");
  const size_t pathAt = s.url.find('/', sep + 3);
  std::string hostPort = s.url.substr(sep + 3, pathAt == std::string::npos ? std::string::npos : pathAt - sep - 3);
  std::string path = pathAt == std::string::npos ? "/" : s.url.substr(pathAt);
  if (path.back() != '/') path += '/';  // a folder: curl lists a URL ending in '/'
  std::string host = hostPort;
  if (!host.empty() && host.front() == '[') host = host.substr(1, host.find(']') - 1);
  else host = host.substr(0, host.find(':'));
  // The login as placeholders: the egress process fills them in, pined never writes them into a URL.
  out.request.method = file.empty() ? "FTP-LIST" : "FTP-RETR";
  out.request.url = s.url.substr(0, sep + 3) + "${secret:" + s.usernameSecret + "}:${secret:" + s.passwordSecret +
                    "}@" + hostPort + path + percentEncoded(file);
  out.policy.allowHosts = {host};
  // An address confirmed as public stays public, as for http sources.
  out.policy.allowLoopback = out.policy.allowPrivate = s.localNetwork;
  out.policy.allowPlainHttp = s.plainFtp;  // for FTP: no TLS, only by the owner's `tls: none`
  out.policy.totalTimeoutMs = file.empty() ? 60 * 1000 : 30 * 60 * 1000;
  out.policy.idleTimeoutMs = 30 * 1000;
  out.policy.maxResponseBytes = file.empty() ? kMaxListing : (size_t)s.maxFileMb << 20;
  return out;
}

std::shared_ptr<const config::Source> ftpSourceFor(const Supervisor& sup, const std::string& name, size_t fileBytes,
                                                   const char* method) {
  KJ_REQUIRE(fileBytes <= 1024, method, "the file name is too long");
  auto cfg = sup.config();
  KJ_REQUIRE(cfg != nullptr, method, "no configuration is loaded");
  for (const auto& s : cfg->pine.sources)
    if (s.name == name && s.type == "ftp") return std::shared_ptr<const config::Source>(cfg, &s);
  KJ_FAIL_REQUIRE(method, "no ftp source of that name", name);
}

kj::Promise<void> listFtp(
    Supervisor& sup, EgressProcesses& egress,
    capnp::CallContext<proto::Supervisor::ListFtpParams, proto::Supervisor::ListFtpResults> context) {
  auto p = context.getParams();
  auto source = ftpSourceFor(sup, p.getSource(), p.getFile().size(), "listFtp");
  FtpLook look = ftpLook(*source, p.getFile());
  if (!look.refused.empty()) {
    audit("egress.refused", {{"purpose", "source:" + source->name}, {"reason", look.refused}});
    EgressAnswer refused;
    refused.error = source->url + ": " + look.refused;
    refused.done = true;
    setAnswer(context.getResults(), refused);
    return kj::READY_NOW;
  }
  return egress.run(look.request, kj::mv(look.policy), p.getSink(), "source:" + source->name)
      .then([context](EgressAnswer a) mutable { setAnswer(context.getResults(), a); });
}

}  // namespace pine
