// The broker's side of `http` sources (broker/sources/http_poller.h): each GET is pined's
// pollSource (pined holds the token and decides where it may go), the body comes back through
// a ByteSink kept whole up to pined's cap, what a source saw is remembered in the store's
// source_state and its status line, and its events are committed through the bus.
#pragma once
#include <functional>

#include "broker/event_bus.h"
#include "broker/sources/http_poller.h"
#include "broker/store/store.h"
#include "proto/supervisor.capnp.h"

namespace pine {

sources::HttpServices httpSourceServices(std::function<proto::Supervisor::Client()> supervisor, store::Store& store,
                                         EventBus& bus);

}  // namespace pine
