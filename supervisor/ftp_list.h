// The listFtp method of the Supervisor capability: one look at an `ftp` source's remote folder
// (or one file in it), made by a pine-egress process. pined builds the request from the source's
// configuration: the address, TLS as configured and the login, as `${secret:NAME}` placeholders
// that only the egress process fills in. The broker names the source and at most a plain file
// name; it never sees the login nor chooses where the request goes. The listing is not read here:
// it goes to the broker, which parses it (broker/sources/ftp_listing.h).
#pragma once
#include <kj/async.h>

#include <memory>
#include <string>

#include "config/model.h"
#include "egress/request/request.h"
#include "proto/supervisor.capnp.h"

namespace pine {

class Supervisor;
class EgressProcesses;

// The request for one look at `source` (file empty: the listing) and its rules, or why there is
// none (`refused`).
struct FtpLook {
  egress::EgressRequest request;
  egress::EgressPolicy policy;
  std::string refused;
};
FtpLook ftpLook(const config::Source& source, const std::string& file);

// The ftp source named so in the configuration in force (which the pointer keeps alive), for the
// broker's request `method` with a file name of `fileBytes`: throws when there is none.
std::shared_ptr<const config::Source> ftpSourceFor(const Supervisor& sup, const std::string& name, size_t fileBytes,
                                                   const char* method);

kj::Promise<void> listFtp(
    Supervisor& sup, EgressProcesses& egress,
    capnp::CallContext<proto::Supervisor::ListFtpParams, proto::Supervisor::ListFtpResults> context);

}  // namespace pine
