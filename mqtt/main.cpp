// pine-mqtt: keeps one MQTT session for one source, for the broker. pined starts it by exec,
// already inside its sandbox (network; no home, no .env; seccomp; an unprivileged uid when
// pined is root), writes its job (with the login's values) on fd 3, and hands the other end of
// that socket to the broker. It exits when the broker closes it.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>

#include <cstdio>
#include <string_view>

#include "common/sanitizer_no_proc.h"  // no /proc in its sandbox
#include "mqtt/connector.h"
#include "common/version_flag.h"

// What this process may allocate (Linux counts heap and private writable mappings). Its batches
// and the largest message a server should send it (kMaxPacketBytes) are far below this. A server
// that ignores MQTT 5's Maximum Packet Size, or a 3.1.1 one without max_packet_size, may send a
// message of up to 256 MB, which libmosquitto allocates whole before pine-mqtt sees it: that
// allocation fails here, and the connection ends, instead of the process growing by it.
constexpr rlim_t kMaxDataBytes = 128 << 20;

int main(int argc, char** argv) {
  if (pine::printedVersion(argc, argv, "pine-mqtt")) return 0;
#ifndef __SANITIZE_ADDRESS__  // ASan's shadow memory is a private writable mapping of terabytes
  const rlimit data{kMaxDataBytes, kMaxDataBytes};
  setrlimit(RLIMIT_DATA, &data);
#endif
  if (argc > 1 || fcntl(3, F_GETFD) == -1) {
    const bool help = argc > 1 && (std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h");
    std::fputs("usage: pine-mqtt   (no arguments: reads one MqttJob, proto/mqtt.capnp, on fd 3, then serves\n"
               "                    MqttSession to the broker on the same socket; started by pined)\n",
               help ? stdout : stderr);
    return help ? 0 : 2;
  }
  signal(SIGPIPE, SIG_IGN);  // a vanished broker is a failed write, which ends the session
  return pine::mqtt::runConnector(3);
}
