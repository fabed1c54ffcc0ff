@0xa8c0f43ccbbf4150;
# Trust boundary: pined (privileged, holds every secret) -> pine-egress (one process per
# request, exec'd fresh and sandboxed: network, no home, no .env).
#
# Not RPC: plain messages over the socketpair that is the process's fd 3. pined writes one
# EgressJob and the process answers with EgressFrame messages (a head, body chunks, an
# error, done) and exits. pined reads the framing and relays each chunk to the broker's
# ByteSink without looking inside it; everything in a frame has been redacted by the process.

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("pine::proto::egress");

struct EgressJob {
  request @0 :Request;
  policy @1 :Policy;
  secrets @2 :List(Secret);
  # Exactly the values the request's placeholders name (pined checked where they sit first);
  # none for a download. Never the rest of .env.
}

struct Request {
  method @0 :Text;
  url @1 :Text;               # ${secret:NAME} allowed in userinfo, path, query, fragment
  headers @2 :List(Field);    # ${secret:NAME} allowed in values
  body @3 :Data;              # no placeholders
}

struct Field {
  name @0 :Text;
  value @1 :Text;
}

struct Secret {
  name @0 :Text;
  value @1 :Text;
}

struct Policy {
  allowPrivate @0 :Bool;
  allowLoopback @1 :Bool;
  allowPlainHttp @2 :Bool;
  allowHosts @3 :List(Text);     # empty: any public host
  connectTimeoutMs @4 :Int64;
  totalTimeoutMs @5 :Int64;
  idleTimeoutMs @6 :Int64;       # 0: none
  maxResponseBytes @7 :UInt64;   # decoded body bytes
  caBundle @8 :Data;             # PEM: trust only these; empty: the system store
}

struct EgressFrame {
  union {
    head @0 :Head;       # once, before the first chunk
    chunk @1 :Data;      # the next piece of the body, redacted; at most 256 KiB
    error @2 :Text;      # why the request failed, redacted; at most once, before done
    done @3 :Void;       # the last frame; the process exits after it
  }
}

struct Head {
  status @0 :UInt16;
  headers @1 :List(Field);  # redacted
}
