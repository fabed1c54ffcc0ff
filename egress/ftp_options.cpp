#include "egress/ftp_options.h"

namespace pine::egress {

FtpMode ftpModeOf(const EgressRequest& request) {
  if (request.method == "FTP-LIST") return FtpMode::List;
  if (request.method == "FTP-RETR") return FtpMode::Retr;
  return FtpMode::None;
}

bool setFtpOptions(CURL* c, FtpMode mode, bool plain) {
  bool ok = true;
  auto set = [&](CURLoption opt, auto value) { ok = ok && curl_easy_setopt(c, opt, value) == CURLE_OK; };
  // ftps:// is TLS from the start whatever this says; for ftp:// it makes AUTH TLS (and PROT P for
  // the data) a condition: a server without TLS ends the request before the login is sent.
  set(CURLOPT_USE_SSL, static_cast<long>(plain ? CURLUSESSL_NONE : CURLUSESSL_ALL));
  set(CURLOPT_FTP_SKIP_PASV_IP, 1L);  // a hostile server cannot point the data connection elsewhere
  set(CURLOPT_FTPPORT, static_cast<const char*>(nullptr));  // passive only: no connection from the server
  set(CURLOPT_FTP_USE_EPSV, 1L);
  set(CURLOPT_FTP_FILEMETHOD, static_cast<long>(CURLFTPMETHOD_SINGLECWD));
  if (mode == FtpMode::List) set(CURLOPT_CUSTOMREQUEST, "MLSD");
  return ok;
}

}  // namespace pine::egress
