// pine's admin group (pined --admin-group NAME): the owner's account administers a
// pined that runs as a service account. Members may use pine.sock and pined.sock and
// read the token, the logs and the audit log; .env, the configuration, the agents'
// folders and the database stay pine's alone. The sockets' peer check
// (common/unix_socket.h) is the gate; these modes are the second wall.
#pragma once
#include <sys/types.h>

#include <string>

#include "common/home.h"
#include "common/unix_socket.h"

namespace pine {

// Resolves NAME from the system and checks that this process may give files to it: it
// must run as a service account (not root, whose broker and workers have uids of their
// own) that is a member of the group. Throws with what to do otherwise.
SocketAccess resolveAdminGroup(const std::string& name);

// The home, data/, data/logs (setgid, so new logs get the group), the token and the
// logs already there: group-readable by the admin group, nothing for others.
void shareHomeWithAdmins(const Home& home, gid_t gid);

// A socket in the home that this process or the broker bound: mode 660, the admin
// group. Never follows a link and touches nothing but a socket with one name, since the
// broker can put other things at that name.
void shareSocketWithAdmins(const std::string& path, gid_t gid);

// What the functions above throw when a system call fails: "cannot WHAT PATH for pine's admin
// group: " and errno's text. shareSocketWithAdmins is one file per platform (admin_socket_*.cpp).
[[noreturn]] void failForAdmins(const std::string& what, const std::string& path);

}  // namespace pine
