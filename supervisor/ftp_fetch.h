// The fetchFtpFile method of the Supervisor capability: one file of an `ftp` source with
// fetch: true, fetched by a pine-egress process (the request is listFtp's, ftp_list.h) and
// written by pined into the owning agent's inbox, inbox/ftp-<source>/<file> in its workspace.
// pined reads none of the bytes: it counts and hashes them on their way to the file. The
// workspace is the agent's to change, so every step is descriptor-based: each folder is opened
// below the one before without following a link, the file is written under a temporary name
// created new (O_EXCL) and renamed over the old copy only once whole, and as root what pined
// creates is handed to the agent's own ids.
#pragma once
#include <kj/async.h>

#include "proto/supervisor.capnp.h"

namespace pine {

class Supervisor;
class EgressProcesses;

kj::Promise<void> fetchFtpFile(
    Supervisor& sup, EgressProcesses& egress,
    capnp::CallContext<proto::Supervisor::FetchFtpFileParams, proto::Supervisor::FetchFtpFileResults> context);

}  // namespace pine
