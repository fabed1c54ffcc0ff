@0x9948ab283dc738f5;
# Trust boundary: pined (holds the secrets) -> pine-mqtt (one MQTT session for one source,
# exec'd and sandboxed: network, no home, no .env), and pine-broker <-> pine-mqtt.
#
# One socketpair: pined writes one MqttJob on its end (the process's fd 3 is the other),
# then hands that end to the broker (Supervisor.openMqtt). The job's bytes travel towards
# pine-mqtt only, so the broker never reads them. After the job the same socket carries
# Cap'n Proto RPC between the broker and pine-mqtt: each side serves its bootstrap below.
# pined never reads what crosses it.

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("pine::proto::mqtt");

struct MqttJob {
  source @0 :Text;             # the source's name, for log lines
  host @1 :Text;
  port @2 :UInt16;
  tls @3 :Bool;                # mqtts://: the server's certificate and host name are verified, always
  clientId @4 :Text;           # empty: a random one
  topics @5 :List(Text);       # subscribed on every connect
  publish @6 :List(Text);      # the only topics (patterns with + and #) the session publishes on
  qos @7 :UInt8;               # 0, 1 or 2, for subscriptions and publishes
  keepaliveSec @8 :UInt16;
  username @9 :Text;           # the value of the source's usernameSecret; empty: none
  password @10 :Text;          # the value of its passwordSecret; empty: none
  caBundle @11 :Data;          # PEM read by pined from the source's caFile; empty: the system's CAs
  reconnectMinMs @12 :UInt32;  # the first wait after losing the server; it doubles, with jitter,
  reconnectMaxMs @13 :UInt32;  # up to this
  unsubscribe @14 :List(Text); # filters this client id subscribed to before and not now: removed
                               # on every connect, before `topics` are subscribed (the session at
                               # the server keeps its subscriptions)
}

interface MqttSession {
  # Served by pine-mqtt to the broker.
  publish @0 (topic :Text, payload :Data) -> (error :Text);
  # Sends on topic unless it is not on the job's publish list (refused here too, whatever the
  # broker decided) or the session is not connected; error says why, empty when it was handed to
  # the MQTT server. payload at most 256 KiB.
}

const maxLinkMessageBytes :UInt32 = 2097152;
# The largest Cap'n Proto message either side reads on this link: a batch is at most 1000
# messages or 512 KiB of them plus the one that passed the mark (256 KiB of payload at most).

struct Message {
  topic @0 :Text;
  payload @1 :Data;            # at most 256 KiB (larger ones are reported, not sent)
  retained @2 :Bool;           # the server's stored message, sent because pine-mqtt subscribed
}

interface MqttEvents {
  # Served by the broker to pine-mqtt.
  messages @0 (messages :List(Message)) -> ();
  # What one read of the session's socket brought, in order, as received: the broker checks each
  # topic and turns each payload into an event. Returns once every one is committed to the store
  # (or dropped by the broker's rules), and only then does pine-mqtt acknowledge them to the MQTT
  # server: a message is never acknowledged before it is durable. An exception means some were not
  # committed: pine-mqtt drops the connection without acknowledging, so the server sends them again.
  # pine-mqtt sends the next batch only once this one returned: a slow store slows the session.
  status @1 (connected :Bool, refused :Bool, text :Text) -> ();
  # The session's state changed: connected, lost (reconnecting with backoff), or refused by the
  # server (a wrong password, say: refused is true; retried with backoff). text says which, for
  # the log and `pinectl sources`; never a secret.
}
