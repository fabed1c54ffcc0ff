// The one sandbox policy model every backend enforces (Linux: namespaces +
// Landlock + seccomp; macOS: a generated Seatbelt profile). Paths in a Policy
// are absolute and canonical (realpath'd; on macOS /tmp is /private/tmp).
// Deny wins over allow.
//
// The supervisor builds each task's Policy with agentPolicy(): configuration
// plus the grants the broker passes. What no grant can open (pine's home, its
// .env, other agents' folders, pine's program files) is checked here, after
// canonicalisation, so symlinks, "..", trailing slashes and parents ("/", the
// home's parent) cannot smuggle it in.
#pragma once
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace pine::sandbox {

enum class Network { None, Localhost, All };

struct Policy {
  std::vector<std::string> readable;    // trees that may be read (and executed, unless execOnly)
  std::vector<std::string> writable;    // trees that may be read and written
  std::vector<std::string> denyRead;    // never readable, even inside a readable or writable tree
  std::vector<std::string> denyWrite;   // never writable, even inside a writable tree (.git/hooks, ...)
  Network network = Network::None;
  // What a process that is not a worker (the broker) needs instead. The defaults are a worker's.
  bool execOnly = false;                 // nothing may be executed but `executable`
  std::vector<std::string> executable;   // files that may be executed: the program and its ELF loader
  std::vector<std::string> listenSockets;  // unix sockets it makes and listens on (Landlock: in their folders)
  bool unixSockets = false;              // socket(AF_UNIX) allowed: to listen on a control socket
  // With network all: TCP only on these ports (bind: listeners; connect: what it dials).
  bool tcpPortsOnly = false;
  std::vector<int> tcpBind, tcpConnect;
  // Chromium's own sandbox (browserPolicy): clone/unshare with CLONE_NEWUSER and chroot allowed.
  bool userNamespaces = false;
};

// A configuration or grant that cannot become a policy. what() names the path
// or variable and says why, in words an operator can act on.
struct PolicyError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

const char* networkName(Network n);                 // "none" | "localhost" | "all"
Network parseNetwork(std::string_view s);           // throws PolicyError on anything else
Network widest(Network a, Network b);

// ${WORKSPACE}, ${HOME}, ${TMPDIR} (and whatever else `vars` holds, keyed
// without the braces). An unknown or unterminated variable throws PolicyError
// naming it. "$" not followed by "{" is literal.
using Variables = std::map<std::string, std::string>;
std::string expandVariables(std::string_view text, const Variables& vars);

// Absolute path with every existing component resolved (realpath of the longest
// existing prefix), "." dropped, no trailing slash. A relative path, an empty
// one, or ".." after a component that does not exist throws PolicyError.
std::string canonicalPath(std::string_view path);

// True when `inner` is `outer` or lies beneath it (both canonical).
bool pathWithin(std::string_view inner, std::string_view outer);

// Where one agent's task lives. All paths absolute; agentPolicy canonicalises them.
struct AgentPaths {
  std::string agentId;
  std::string pineHome;                     // config, .env, data/, agents/, sandbox/
  std::string userHome;                     // the owner's real home: ${HOME} in configuration
  std::string workspace;                    // rw; ${WORKSPACE}
  std::string privateHome;                  // rw; $HOME inside the sandbox (pineHome/sandbox/<id>)
  std::string tmpdir;                       // rw; $TMPDIR inside the sandbox, private to the agent
  std::vector<std::string> skills;          // ro: the agent's own skills and the shared ones
  std::string docs;                         // ro: pine's manual
  std::string programDir;                   // ro: pine's program files (pine-worker runs from here)
  std::string openedFolder;                 // rw for this conversation only; empty for none
  std::string userMd;                       // main agent only: pineHome/USER.md, rw while untainted
  std::vector<std::string> otherWorkspaces; // other agents' workspaces that live outside pine's home
  // The system runtime. Empty: defaultSystemReadable() / defaultSystemWritable().
  std::vector<std::string> systemReadable;
  std::vector<std::string> systemWritable;
};

// What configuration (sandbox.read / sandbox.write / sandbox.network) and the
// broker's approved request_access grants add. Entries may use variables.
struct Grants {
  std::vector<std::string> read;
  std::vector<std::string> write;
  Network network = Network::None;
};

// /usr, /lib*, /bin, /sbin, /etc, /proc (Linux; macOS has its own list), and
// the device files a shell needs. Only paths that exist, canonical, de-duplicated.
std::vector<std::string> defaultSystemReadable();
std::vector<std::string> defaultSystemWritable();  // /dev/null, /dev/zero, /dev/full, /dev/tty
// Secrets inside the system runtime: /etc/shadow, /etc/gshadow, /etc/sudoers, host keys, ...
std::vector<std::string> defaultSystemDenyRead();

// Instruction files a tainted session may not write, at any depth.
const std::vector<std::string>& instructionNames();  // AGENTS.md SOUL.md MEMORY.md USER.md CLAUDE.md .pi .agents

// What in the private home ($HOME of the worker) changes what later runs execute or where
// they fetch from: shells' start-up files, git's, npm's, pip's, curl's and wget's settings,
// and the folders where tools keep settings or code they load (.config, .local, .ssh, ...).
// A tainted session may not write them; a name ending in '/' is a folder.
const std::vector<std::string>& homeConfigNames();

// Why `path` (canonical) may never be granted to this agent, or nullopt when it
// may. Refused: anything that is, contains or lies inside pine's home (except
// what lies inside the agent's own workspace, private home or temp), its .env,
// pine's program files, another agent's folder or workspace.
std::optional<std::string> neverGrantableReason(const std::string& canonical, const AgentPaths& paths);

// The variables of this agent's configuration: WORKSPACE, HOME (owner's), TMPDIR.
Variables agentVariables(const AgentPaths& paths);

// The task's policy. Throws PolicyError when a grant is refused (the message
// names it and why) or when the agent's own paths overlap what must stay
// closed. With `tainted`, USER.md is no longer writable and every .git/hooks,
// .git/config (also of submodules and nested repositories) and instruction file
// under a writable root goes into denyWrite; instruction names directly in a
// writable root are listed whether or not they exist yet. In every session, each
// secrets file (the path jail's NameRules::secretFiles: .env, .env.*, any case)
// in the agent's own trees (workspace, opened folder, grants, private home, temp,
// skills) goes into denyRead. Those trees are walked without following links;
// past 50,000 folders or 64 levels the task is refused (PolicyError).
Policy agentPolicy(const AgentPaths& paths, const Grants& grants, bool tainted);

// Where the broker lives and what it must reach. pined fills it from the home and the configuration.
struct BrokerPaths {
  std::string pineHome;
  std::string program;                   // the broker's program file: the only one it may execute
  std::string loader;                    // its ELF interpreter (elfInterpreter), empty for a static one
  std::vector<std::string> otherReadable;  // files the configuration names outside the home (a script)
  std::vector<std::string> workspaces;   // agents' workspaces inside the home: not the broker's to read
  std::vector<std::string> watchedFolders;  // folder sources' folders, read-only; never in or above the home
  std::vector<int> listenPorts;          // TCP: the control API (http.port)
  std::vector<int> connectPorts;         // TCP dialled out; pined passes none (MQTT runs in pine-mqtt)
  std::vector<std::string> systemReadable;  // empty: brokerSystemReadable()
  std::vector<std::string> systemDenyRead;  // empty: defaultSystemDenyRead()
};

// The broker's policy (DESIGN: "may read the configuration files, instruction files and skills it
// needs, read and write data/ and make its sockets; it may not read .env, write any configuration
// file, agent folder or program file, or exec programs"): the home readable except .env, pined.sock,
// sandbox/, checkpoints/ (pined's copies of the workspaces) and the workspaces; data/ writable;
// pine.sock made in the home (nothing else); its own program the only executable file; network all
// but TCP on the given ports only.
Policy brokerPolicy(const BrokerPaths& paths);

// Libraries, locales, time zones, certificates, /etc and /proc: what a program needs to run, but
// no folder of programs (/bin, /usr/bin, ...), so that the loader, which must stay executable for
// the broker's own start, has no program to load from there.
std::vector<std::string> brokerSystemReadable();

// The broker's whole environment: PATH, LANG, TMPDIR (data/tmp: SQLite's temporary files).
std::vector<std::string> brokerEnvironment(const std::string& pineHome, const std::string& lang = "C.UTF-8");

// The ELF interpreter (PT_INTERP) of a program, canonical; "" for a static program. Throws
// PolicyError when the file cannot be read or is not an ELF file of this machine.
std::string elfInterpreter(const std::string& program);

// The whole environment of a worker: PATH, LANG, HOME, TMPDIR, TERM. Nothing else.
std::vector<std::string> workerEnvironment(const AgentPaths& paths, const std::string& lang = "C.UTF-8",
                                           const std::string& term = "dumb");

}  // namespace pine::sandbox

namespace pine::sandbox {

// Where a pine-egress process (one HTTP request for pined) runs from, and what it must never see.
struct EgressPaths {
  std::string program;     // pine-egress: with its ELF loader, the only files it may execute
  std::string pineHome;    // denied, with its .env, wherever it lies
  std::string userHome;    // the owner's home: not readable, also where a readable tree holds it
  // The libraries. Empty: /usr, /lib, /lib32, /lib64, /libx32 (those that exist).
  std::vector<std::string> systemReadable;
};

// The egress process's policy: the network (all of it: address rules are the process's
// own), the libraries, and read-only the files name resolution and TLS need (resolv.conf,
// hosts, nsswitch.conf, gai.conf, host.conf, ld.so.cache, /etc/ssl without its private/,
// the CA folders); no other part of /etc, nothing writable, not /proc; nothing to execute
// but its own program and loader. pine's home, its .env and the owner's home are denied
// even where a readable tree holds them. Throws PolicyError when a path cannot be made
// canonical or the program is not an ELF file, or when it lies inside pine's home.
Policy egressPolicy(const EgressPaths& paths);

}  // namespace pine::sandbox

namespace pine::sandbox {

// Where pine-browser (the bundled browser MCP server) runs from and what it may write.
struct BrowserPaths {
  EgressPaths egress;              // pine-browser itself, pine's home and the owner's home (denied)
  std::string chromium;            // Chromium's program file (Debian: /usr/lib/chromium/chromium)
  std::string dataDir;             // the server's own folder: its fresh profiles (or the named one)
  std::string screenshots;         // the agent's workspace's screenshots/ folder; empty: none
};

// pine-browser's policy: the egress process's (network; libraries and what name resolution
// and TLS read; pine's home, .env and the owner's home denied; nothing else executable) plus
// what Chromium with its own sandbox on needs, no more: Chromium's program executable (it
// starts its helpers as /proc/self/exe); /proc writable, so that Chromium's namespace sandbox
// can write its new user namespace's uid_map, gid_map and setgroups (pined's fresh /proc of
// the pid namespace: only pine-browser's own processes are there); user namespaces and chroot
// (seccomp: Chromium chroots into an empty folder inside its own user namespace); fonts'
// settings read-only; AF_UNIX (its process singleton), with each entry of /run in denyRead (a
// mount namespace masks them: the system's sockets); /dev/shm, the data folder and the
// screenshots folder writable. Throws
// PolicyError as egressPolicy does, or when the data or screenshots folder lies in a readable
// tree, or holds pine's home.
Policy browserPolicy(const BrowserPaths& paths);

}  // namespace pine::sandbox
