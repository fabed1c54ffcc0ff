// One pine-mqtt job, end to end: read the MqttJob pined wrote on the socket (proto/mqtt.capnp),
// start the Session, then speak Cap'n Proto with the broker on the same socket: serve it
// MqttSession (publish, refused here too when off the job's publish list) and send it every
// message and change of state the session reports. Ends when the broker closes the socket.
#pragma once

namespace pine::mqtt {

enum ConnectorExit {
  kConnectorDone = 0,        // the broker closed the socket
  kConnectorNoJob = 2,       // what came first was not a valid MqttJob
  kConnectorCannotRun = 3,   // the session could not be set up (told to the broker, then this)
};

// `fd`: the socket (fd 3 when pined started the process). Blocks until the end.
int runConnector(int fd);

}  // namespace pine::mqtt
