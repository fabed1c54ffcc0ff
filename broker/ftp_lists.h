// The broker's side of `ftp` sources (broker/sources/ftp_poller.h): each look is pined's listFtp
// (pined holds the login and decides where the request goes), the listing comes back through a
// ByteSink kept whole up to pined's cap, what a source saw is remembered in the store's
// source_state and its status line, and its events are committed through the bus.
#pragma once
#include <functional>

#include "broker/event_bus.h"
#include "broker/sources/ftp_poller.h"
#include "broker/store/store.h"
#include "proto/supervisor.capnp.h"

namespace pine {

sources::FtpServices ftpSourceServices(std::function<proto::Supervisor::Client()> supervisor, store::Store& store,
                                       EventBus& bus);

}  // namespace pine
