// sandbox-probe: performs one named action from inside a sandbox and says how
// it went. Exit 0: the action succeeded ("ok ..."); 1: it was refused
// ("refused: <errno name> ..."); 2: usage error. The attack tests expect 1,
// their legitimate twins 0.
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/io_uring.h>
#include <netinet/in.h>
#include <signal.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

int refused(const char* what) {
  int e = errno;
  printf("refused: %s (%s): %s\n", strerrorname_np(e) ? strerrorname_np(e) : "?", strerror(e), what);
  return 1;
}

int ok(const std::string& what) {
  printf("ok %s\n", what.c_str());
  return 0;
}

int readFile(const char* path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return refused("open");
  char buf[64];
  ssize_t n = read(fd, buf, sizeof buf);
  close(fd);
  if (n < 0) return refused("read");
  return ok("read " + std::to_string(n) + " bytes");
}

int writeFile(const char* path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return refused("open");
  ssize_t n = write(fd, "#!/bin/sh\necho pwned\n", 21);
  close(fd);
  if (n != 21) return refused("write");
  return ok("wrote");
}

int connectTo(int domain, int type, const sockaddr* sa, socklen_t len) {
  int s = socket(domain, type | SOCK_CLOEXEC, 0);
  if (s < 0) return refused("socket");
  if (type == SOCK_DGRAM) {
    ssize_t n = sendto(s, "x", 1, 0, sa, len);
    close(s);
    if (n != 1) return refused("sendto");
    return ok("sent");
  }
  if (connect(s, sa, len) != 0) {
    close(s);
    return refused("connect");
  }
  close(s);
  return ok("connected");
}

int inet(int type, const char* host, const char* port) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)atoi(port));
  inet_pton(AF_INET, host, &sa.sin_addr);
  return connectTo(AF_INET, type, (sockaddr*)&sa, sizeof sa);
}

// Listens on 127.0.0.1 and connects to itself: what "network localhost" is for.
int tcpSelf() {
  int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (l < 0) return refused("socket");
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof sa;
  if (bind(l, (sockaddr*)&sa, len) != 0 || listen(l, 1) != 0 || getsockname(l, (sockaddr*)&sa, &len) != 0)
    return refused("bind/listen");
  int rc = connectTo(AF_INET, SOCK_STREAM, (sockaddr*)&sa, len);
  close(l);
  return rc;
}

int unixConnect(const char* path, bool abstract) {
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  socklen_t len;
  if (abstract) {
    sa.sun_path[0] = '\0';
    strncpy(sa.sun_path + 1, path, sizeof sa.sun_path - 2);
    len = (socklen_t)(offsetof(sockaddr_un, sun_path) + 1 + strlen(path));
  } else {
    strncpy(sa.sun_path, path, sizeof sa.sun_path - 1);
    len = sizeof sa;
  }
  return connectTo(AF_UNIX, SOCK_STREAM, (sockaddr*)&sa, len);
}

int socketPair() {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return refused("socketpair");
  char c = 0;
  if (write(sv[0], "y", 1) != 1 || read(sv[1], &c, 1) != 1 || c != 'y') return refused("socketpair io");
  return ok("socketpair");
}

// The broker link: sendmsg/recvmsg on the inherited fd 3 (the harness echoes).
int fd3() {
  char msg[] = "ping";
  iovec iov = {msg, 4};
  msghdr mh{};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  if (sendmsg(3, &mh, 0) != 4) return refused("sendmsg on fd 3");
  char back[8] = {};
  iovec riov = {back, sizeof back};
  msghdr rh{};
  rh.msg_iov = &riov;
  rh.msg_iovlen = 1;
  if (recvmsg(3, &rh, 0) != 4 || memcmp(back, "pong", 4) != 0) return refused("recvmsg on fd 3");
  return ok("fd 3");
}

int ioUring() {
  io_uring_params p{};
  long fd = syscall(SYS_io_uring_setup, 4, &p);
  if (fd < 0) return refused("io_uring_setup");
  close((int)fd);
  return ok("io_uring");
}

int capsetFull() {
  __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2];
  memset(data, 0xff, sizeof data);
  if (syscall(SYS_capset, &hdr, data) != 0) return refused("capset");
  return ok("capset");
}

// Everything a worker must start with, read back from the kernel.
int status() {
  FILE* f = fopen("/proc/self/status", "r");
  if (!f) return refused("open /proc/self/status");
  char line[256];
  std::string bad;
  while (fgets(line, sizeof line, f)) {
    std::string l = line;
    auto val = [&](const char* k) { return l.rfind(k, 0) == 0 ? l.substr(strlen(k)) : std::string(); };
    for (const char* k : {"CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:"}) {
      std::string v = val(k);
      if (!v.empty() && v.find_first_not_of("0 \t\n") != std::string::npos) bad += l;
    }
    if (!val("NoNewPrivs:").empty() && val("NoNewPrivs:").find('1') == std::string::npos) bad += l;
    if (!val("Seccomp:").empty() && val("Seccomp:").find('2') == std::string::npos) bad += l;
    if (!val("Groups:").empty() && val("Groups:").find_first_not_of(" \t\n") != std::string::npos) bad += l;
  }
  fclose(f);
  if (getuid() == 0 || geteuid() == 0) bad += "uid 0\n";
  if (!bad.empty()) {
    printf("privileged: %s", bad.c_str());
    return 1;
  }
  return ok("no capabilities, no_new_privs, seccomp, uid " + std::to_string(getuid()));
}

int run(char** argv) {
  pid_t pid = fork();
  if (pid < 0) return refused("fork");
  if (pid == 0) {
    execv(argv[0], argv);
    _exit(127);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return ok("ran");
  printf("refused: the program ended with status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IONBF, 0);
  if (argc < 2) return 2;
  std::string a = argv[1];
  auto need = [&](int n) {
    if (argc < 2 + n) {
      fprintf(stderr, "%s needs %d arguments\n", a.c_str(), n);
      exit(2);
    }
  };
  if (a == "read") { need(1); return readFile(argv[2]); }
  if (a == "write") { need(1); return writeFile(argv[2]); }
  if (a == "mkdir") { need(1); return mkdir(argv[2], 0755) == 0 ? ok("mkdir") : refused("mkdir"); }
  if (a == "unlink") { need(1); return unlink(argv[2]) == 0 ? ok("unlink") : refused("unlink"); }
  if (a == "symlink") { need(2); return symlink(argv[2], argv[3]) == 0 ? ok("symlink") : refused("symlink"); }
  if (a == "link") { need(2); return link(argv[2], argv[3]) == 0 ? ok("link") : refused("link"); }
  if (a == "rename") { need(2); return rename(argv[2], argv[3]) == 0 ? ok("rename") : refused("rename"); }
  if (a == "tcp") { need(2); return inet(SOCK_STREAM, argv[2], argv[3]); }
  if (a == "udp") { need(2); return inet(SOCK_DGRAM, argv[2], argv[3]); }
  if (a == "tcp-self") return tcpSelf();
  if (a == "unix") { need(1); return unixConnect(argv[2], false); }
  if (a == "abstract") { need(1); return unixConnect(argv[2], true); }
  if (a == "socketpair") return socketPair();
  if (a == "fd3") return fd3();
  if (a == "io_uring") return ioUring();
  if (a == "kill") { need(1); return kill(atoi(argv[2]), 0) == 0 ? ok("kill") : refused("kill"); }
  if (a == "ptrace") {
    need(1);
    return ptrace(PTRACE_ATTACH, atoi(argv[2]), nullptr, nullptr) == 0 ? ok("ptrace") : refused("ptrace");
  }
  if (a == "kill-child") {
    pid_t c = fork();
    if (c == 0) { pause(); _exit(0); }
    if (c < 0 || kill(c, SIGTERM) != 0) return refused("kill child");
    int st;
    waitpid(c, &st, 0);
    return WIFSIGNALED(st) ? ok("killed own child") : refused("child");
  }
  if (a == "setuid0") return setuid(0) == 0 ? ok("setuid(0)") : refused("setuid");
  if (a == "capset") return capsetFull();
  if (a == "status") return status();
  if (a == "euid0") return geteuid() == 0 ? ok("euid 0") : (printf("refused: euid %d\n", geteuid()), 1);
  if (a == "exec") { need(1); return run(argv + 2); }
  if (a == "sh") { need(1); char* args[] = {(char*)"/bin/sh", (char*)"-c", argv[2], nullptr}; return run(args); }
  if (a == "sleep") { sleep(60); return 0; }
  // Syscalls the filter refuses outright.
  if (a == "userns") return unshare(CLONE_NEWUSER) == 0 ? ok("unshare") : refused("unshare(CLONE_NEWUSER)");
  if (a == "clone-userns") {
    long pid = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, nullptr, nullptr, nullptr, 0);
    if (pid == 0) _exit(0);
    if (pid < 0) return refused("clone(CLONE_NEWUSER)");
    waitpid((pid_t)pid, nullptr, 0);
    return ok("clone");
  }
  if (a == "clone3") {
    long rc = syscall(SYS_clone3, nullptr, 0);
    return rc >= 0 || errno != ENOSYS ? (printf("clone3 reached the kernel\n"), 0) : refused("clone3");
  }
  if (a == "mount") return mount("none", "/tmp", "tmpfs", 0, nullptr) == 0 ? ok("mount") : refused("mount");
  if (a == "setns") {
    int fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return refused("open ns");
    return syscall(SYS_setns, fd, 0) == 0 ? ok("setns") : refused("setns");
  }
  if (a == "keyctl") return syscall(SYS_keyctl, 0 /*GET_KEYRING_ID*/, -3, 0) >= 0 ? ok("keyctl") : refused("keyctl");
  if (a == "bpf") return syscall(SYS_bpf, 0, nullptr, 0) >= 0 || errno != EPERM ? ok("bpf reached") : refused("bpf");
  if (a == "userfaultfd") return syscall(SYS_userfaultfd, 0) >= 0 ? ok("userfaultfd") : refused("userfaultfd");
  if (a == "perf") {
    perf_event_attr pa{};
    pa.size = sizeof pa;
    pa.type = PERF_TYPE_SOFTWARE;
    pa.config = PERF_COUNT_SW_CPU_CLOCK;
    pa.exclude_kernel = 1;
    return syscall(SYS_perf_event_open, &pa, 0, -1, -1, 0) >= 0 ? ok("perf") : refused("perf_event_open");
  }
  if (a == "process_vm_readv") {
    need(1);
    char buf[8];
    iovec local = {buf, sizeof buf}, remote = {(void*)0x400000, sizeof buf};
    return process_vm_readv(atoi(argv[2]), &local, 1, &remote, 1, 0) >= 0 ? ok("read memory")
                                                                         : refused("process_vm_readv");
  }
  fprintf(stderr, "unknown action %s\n", a.c_str());
  return 2;
}
