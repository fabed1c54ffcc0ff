// FTP and FTPS in pine-egress: `ftp` sources (supervisor/ftp_list.h) ask for a folder's listing
// (method FTP-LIST: MLSD, then LIST where the server has no MLSD) or one file (FTP-RETR). Only
// these two methods take ftp:// and ftps:// URLs; every other request stays http(s). The rest of
// a request's path (placeholders in the URL's userinfo, pinned addresses, limits, redaction) is
// perform()'s, as for HTTP.
#pragma once
#include <curl/curl.h>

#include "egress/request/request.h"

namespace pine::egress {

enum class FtpMode { None, List, Retr };

FtpMode ftpModeOf(const EgressRequest& request);

// Sets the FTP options on `c`: TLS on the control and data connections unless `plain` (an ftp://
// URL with `tls: none`), passive mode whose data address is the checked control address, never
// the one the server names, MLSD for a listing. False when this libcurl lacks one.
bool setFtpOptions(CURL* c, FtpMode mode, bool plain);

}  // namespace pine::egress
