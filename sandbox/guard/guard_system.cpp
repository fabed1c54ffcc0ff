#include "sandbox/guard/guard_system.h"
#include "sandbox/guard/text.h"

#include <algorithm>
#include <set>

namespace pine::guard {
namespace {

bool sysIsOption(const std::string& s) { return s.size() > 1 && s[0] == '-'; }

bool sysHas(const std::vector<std::string>& args, std::initializer_list<const char*> opts) {
  for (size_t k = 1; k < args.size(); ++k)
    for (const char* o : opts) {
      std::string_view ov(o);
      if (args[k] == ov || (startsWith(ov, "--") && startsWith(args[k], std::string(ov) + "="))) return true;
    }
  return false;
}

// The non-option words, skipping the values of options that take one
// (valueShort: single letters; valueLong: --name, its value separate unless
// attached with '=').
std::vector<std::string> sysPositional(const std::vector<std::string>& args, std::string_view valueShort = "",
                                       std::initializer_list<const char*> valueLong = {}) {
  std::vector<std::string> out;
  for (size_t k = 1; k < args.size(); ++k) {
    const std::string& t = args[k];
    if (t == "--") {
      out.insert(out.end(), args.begin() + static_cast<long>(k) + 1, args.end());
      break;
    }
    if (!sysIsOption(t)) {
      out.push_back(t);
      continue;
    }
    if (startsWith(t, "--")) {
      if (t.find('=') != std::string::npos) continue;
      for (const char* l : valueLong)
        if (t == l) {
          ++k;
          break;
        }
      continue;
    }
    if (t.size() == 2 && valueShort.find(t[1]) != std::string_view::npos) ++k;
  }
  return out;
}

std::string sysAt(const std::vector<std::string>& v, size_t k) { return k < v.size() ? v[k] : std::string(); }

bool sysOneOf(const std::string& s, std::initializer_list<const char*> set) {
  return std::any_of(set.begin(), set.end(), [&](const char* x) { return s == x; });
}

// A program whose every use is a change of identity or of accounts.
std::optional<std::string> privilege(const std::string& name) {
  static const std::set<std::string> escalate = {
      "sudo",  "sudoedit", "doas",   "su",      "pkexec",  "run0",  "runuser", "login",    "newgrp",
      "sg",    "capsh",    "setpriv", "chroot", "nsenter", "unshare", "gosu",  "su-exec",  "suexec",
      "please", "ksu",     "calife", "dzdo",    "pbrun",   "pfexec", "runas", "setuidgid", "setcap",
      "dsenableroot", "authopen"};
  if (escalate.count(name)) return "runs as another user or with more privilege (" + name + ")";
  static const std::set<std::string> accounts = {
      "visudo", "vipw",     "vigr",    "useradd", "userdel", "usermod", "groupadd", "groupdel", "groupmod",
      "gpasswd", "adduser", "addgroup", "deluser", "delgroup", "passwd", "chpasswd", "chsh",     "chfn",
      "chage",  "pwconv",   "grpconv", "sysadminctl", "createhomedir", "pwpolicy"};
  if (accounts.count(name)) return "changes user accounts or passwords (" + name + ")";
  return std::nullopt;
}

// Service managers, schedulers and login items: what runs again later, or at boot.
std::optional<std::string> persistence(const std::string& name, const std::vector<std::string>& args) {
  auto why = [&](const std::string& what) { return what + " (persistence)"; };
  if (name == "crontab" && !(args.size() == 2 && args[1] == "-l")) return why("edits the crontab");
  if (name == "at" || name == "batch" || name == "atd" || name == "anacron" || name == "schtasks")
    return why("schedules a command");
  if (name == "systemctl") {
    auto pos = sysPositional(args, "tpMHnosP", {"--type", "--property", "--machine", "--host", "--lines", "--output",
                                                "--signal", "--state", "--root", "--kill-whom", "--job-mode",
                                                "--what", "--message", "--when", "--drop-in", "--preset-mode"});
    std::string verb = sysAt(pos, 0);
    if (verb.empty() || startsWith(verb, "list-") || startsWith(verb, "is-") ||
        sysOneOf(verb, {"status", "show", "cat", "help", "get-default", "show-environment", "whoami"}))
      return std::nullopt;
    return why("changes services (systemctl " + verb + ")");
  }
  if (name == "systemd-run" || name == "systemd-socket-activate" || name == "update-rc.d" || name == "chkconfig" ||
      name == "rc-update" || name == "start-stop-daemon" || name == "sfltool" || name == "insserv")
    return why("installs or starts a service (" + name + ")");
  if (name == "service" || name == "rc-service" || name == "initctl" || name == "sv") {
    auto pos = sysPositional(args);
    std::string verb = name == "initctl" ? sysAt(pos, 0) : sysAt(pos, 1);
    if (sysHas(args, {"--status-all", "--list", "-l"}) || sysOneOf(verb, {"status", "list", "show-config", ""}))
      return std::nullopt;
    return why("changes services (" + name + " " + verb + ")");
  }
  if (name == "loginctl") {
    std::string verb = sysAt(sysPositional(args, "pHM", {"--property", "--host", "--machine"}), 0);
    if (verb.empty() || startsWith(verb, "list-") || startsWith(verb, "show-") ||
        sysOneOf(verb, {"session-status", "user-status", "seat-status"}))
      return std::nullopt;
    return why("changes login sessions (loginctl " + verb + ")");
  }
  if (name == "launchctl") {
    std::string verb = sysAt(sysPositional(args), 0);
    if (sysOneOf(verb, {"list", "print", "print-cache", "print-disabled", "blame", "help", "version", "managerpid",
                        "manageruid", "managername", "getenv", "error", "hostinfo", "dumpstate", ""}))
      return std::nullopt;
    return why("changes launch services (launchctl " + verb + ")");
  }
  if (name == "brew") {
    auto pos = sysPositional(args);
    if (sysAt(pos, 0) == "services" && sysOneOf(sysAt(pos, 1), {"start", "restart"}))
      return why("brew services " + sysAt(pos, 1) + " registers a launch agent");
  }
  if (name == "pm2" || name == "forever") {
    std::string verb = sysAt(sysPositional(args), 0);
    if (sysOneOf(verb, {"startup", "unstartup", "save"})) return why(name + " " + verb + " starts programs at boot");
  }
  return std::nullopt;
}

// Settings of the system, its security, network and boot, on Linux and macOS.
std::optional<std::string> settings(const std::string& name, const std::vector<std::string>& args) {
  auto pos = sysPositional(args);
  std::string verb = sysAt(pos, 0);
  auto why = [&](const std::string& what) { return "changes " + what + " (" + name + (verb.empty() ? "" : " " + verb) + ")"; };
  // Whole programs: every use changes the kernel, the boot or security policy.
  static const std::set<std::string> kernel = {"insmod", "rmmod", "modprobe", "depmod", "kextload", "kextunload",
                                               "kextutil", "kexec", "grub-install", "update-grub", "efibootmgr",
                                               "bless", "tccutil", "installer", "dtrace", "dtruss", "fs_usage",
                                               "opensnoop", "execsnoop", "swapon", "swapoff", "losetup",
                                               "add-apt-repository", "apt-key", "automator", "sysctl"};
  if (kernel.count(name)) {
    if (name == "sysctl" && !sysHas(args, {"-w", "--write", "-p", "--load", "--system"}) &&
        std::none_of(pos.begin(), pos.end(), [](const std::string& p) { return p.find('=') != std::string::npos; }))
      return std::nullopt;  // reading a kernel setting
    if (name == "apt-key" && sysOneOf(verb, {"list", "finger", "fingerprint"})) return std::nullopt;
    return why("the kernel, boot, packages or security policy");
  }
  if (name == "kmutil" && !sysOneOf(verb, {"showloaded", "inspect", "find", "log", "print-diagnostics", ""}))
    return why("kernel extensions");
  if (name == "systemextensionsctl" && verb != "list") return why("system extensions");
  if (name == "csrutil" && verb != "status") return why("System Integrity Protection");
  if (name == "spctl" && !sysHas(args, {"--status", "--assess", "-a", "--test", "-t"}) && !args.empty() &&
      args.size() > 1)
    return why("Gatekeeper");
  if (name == "spctl" && sysHas(args, {"--master-disable", "--global-disable", "--add", "--remove", "--enable",
                                       "--disable", "--label", "--master-enable", "--reset-default"}))
    return why("Gatekeeper");
  if (name == "fdesetup" && !sysOneOf(verb, {"status", "list", "isactive", "haspersonalrecoverykey",
                                             "hasinstitutionalrecoverykey", "supportsauthrestart", "help", ""}))
    return why("FileVault");
  if (name == "profiles" && !sysOneOf(verb, {"list", "status", "show", "help", "version", ""}))
    return why("configuration profiles");
  if (name == "defaults" && !sysOneOf(verb, {"read", "read-type", "domains", "find", "help", ""}))
    return why("system or application settings");
  if (name == "systemsetup") {
    for (size_t k = 1; k < args.size(); ++k)
      if (sysIsOption(args[k]) && !startsWith(lower(args[k]), "-get") && !startsWith(lower(args[k]), "-list") &&
          lower(args[k]) != "-help" && lower(args[k]) != "-printcommands")
        return why("system settings");
    return std::nullopt;
  }
  if (name == "networksetup") {
    for (size_t k = 1; k < args.size(); ++k)
      if (sysIsOption(args[k]) && !startsWith(lower(args[k]), "-get") && !startsWith(lower(args[k]), "-list") &&
          lower(args[k]) != "-help" && lower(args[k]) != "-printcommands" && lower(args[k]) != "-version" &&
          !startsWith(lower(args[k]), "-show"))
        return why("network settings");
    return std::nullopt;
  }
  if (name == "scutil" && (sysHas(args, {"--set", "--nc", "--renew"}) || (args.size() == 1)))
    return why("system configuration");  // scutil alone is an interactive editor of the configuration
  if (name == "pmset" && args.size() > 1 && !(args[1] == "-g" || startsWith(args[1], "-g")))
    return why("power settings");
  if (name == "nvram") {
    for (size_t k = 1; k < args.size(); ++k)
      if (args[k] == "-d" || args[k] == "-c" || args[k] == "-f" || args[k].find('=') != std::string::npos)
        return why("firmware variables");
    return std::nullopt;
  }
  if (name == "dscl") {
    static const char* writes[] = {"-create", "-append", "-merge", "-delete", "-passwd", "-change", "-changei",
                                   "-mcxset", "-mcxedit", "-mcxdelete", "-mcximport", "create", "append", "merge",
                                   "delete", "passwd", "change", "auth", "-auth", "authonly", "-authonly"};
    for (size_t k = 1; k < args.size(); ++k)
      for (const char* w : writes)
        if (lower(args[k]) == w) return why("directory services (users and groups)");
    return std::nullopt;
  }
  if (name == "dseditgroup") {
    for (size_t k = 1; k + 1 < args.size(); ++k)
      if (args[k] == "-o" && !sysOneOf(args[k + 1], {"read", "checkmember"})) return why("groups");
    return std::nullopt;
  }
  if (name == "softwareupdate" && !sysHas(args, {"-l", "--list", "--history", "-h", "--help", "--list-full-installers"}))
    return why("software updates");
  if (name == "tmutil" && !sysOneOf(verb, {"listbackups", "latestbackup", "status", "version", "machinedirectory",
                                           "destinationinfo", "compare", "isexcluded", "listlocalsnapshots",
                                           "listlocalsnapshotdates", "uniquesize", "calculatedrift", "help", ""}))
    return why("Time Machine");
  if (name == "mdutil" && !(sysHas(args, {"-s"}) && !sysHas(args, {"-i", "-E", "-X", "-d"})))
    return why("Spotlight indexing");
  if (name == "log" && sysOneOf(verb, {"erase", "config"})) return why("the system log");
  if (name == "xattr") {
    bool change = sysHas(args, {"-c", "-d", "-w", "-cr", "-dr", "-rc", "-rd", "-wr", "-rw"});
    bool quarantine = std::any_of(args.begin(), args.end(), [](const std::string& a) {
      return lower(a).find("com.apple.quarantine") != std::string::npos || lower(a).find("com.apple.provenance") != std::string::npos;
    });
    if (sysHas(args, {"-c", "-cr", "-rc"}) || (change && quarantine))
      return "removes the quarantine Gatekeeper checks (xattr)";
    return std::nullopt;
  }
  if (name == "gsettings" || name == "dconf" || name == "xdg-settings" || name == "xdg-mime" ||
      name == "update-alternatives" || name == "timedatectl" || name == "hostnamectl" || name == "localectl") {
    if (verb.empty() || startsWith(verb, "get") || startsWith(verb, "list") || startsWith(verb, "show") ||
        sysOneOf(verb, {"read", "dump", "query", "status", "help", "watch", "describe", "range", "writable",
                        "monitor", "timesync-status"}) ||
        sysHas(args, {"--display", "--query", "--list", "--get-selections"}))
      return std::nullopt;
    return why("desktop or system settings");
  }
  if (name == "hostname" && !pos.empty()) return why("the host name");
  if (name == "mount" || name == "umount" || name == "diskutil" || name == "hdiutil") {
    if (name == "mount" && args.size() == 1) return std::nullopt;
    if (name == "mount" && sysHas(args, {"-l", "--list", "--show-labels"}) && pos.empty()) return std::nullopt;
    if ((name == "diskutil" || name == "hdiutil") &&
        (verb.empty() || sysOneOf(verb, {"list", "info", "information", "activity", "imageinfo", "verify", "help",
                                         "listfilesystems", "checksum"})))
      return std::nullopt;
    if (name == "diskutil" && verb == "apfs" && startsWith(sysAt(pos, 1), "list")) return std::nullopt;
    return why("mounted file systems or disks");
  }
  if (name == "iptables" || name == "ip6tables" || name == "nft" || name == "ufw" || name == "firewall-cmd" ||
      name == "pfctl" || name == "ebtables" || name == "iptables-restore" || name == "ip6tables-restore") {
    if (sysHas(args, {"-L", "--list", "-S", "--list-rules", "-s", "--state", "--list-all", "--get-zones", "-h",
                      "--help"}) ||
        sysOneOf(verb, {"status", "list", "show", "app"}))
      return std::nullopt;
    if (name == "iptables-restore" || name == "ip6tables-restore") return why("the firewall");
    if (args.size() == 1) return std::nullopt;
    return why("the firewall");
  }
  if (name == "ip" || name == "route" || name == "nmcli" || name == "ifconfig" || name == "rfkill" ||
      name == "ethtool" || name == "iwconfig" || name == "brctl" || name == "tc") {
    static const char* changes[] = {"add",  "del",  "delete", "set",     "flush",  "change", "replace", "append",
                                    "up",   "down", "modify", "connect", "disconnect", "off", "on",     "block",
                                    "unblock", "mtu", "inet", "inet6",  "ether", "alias", "-alias", "addbr", "delbr"};
    for (const auto& p : pos)
      for (const char* c : changes)
        if (p == c) return why("network interfaces or routes");
    if (name == "ethtool" && sysHas(args, {"-s", "--change", "-K", "--features", "-G", "-A", "-C", "-E", "-f"}))
      return why("network interfaces or routes");
    return std::nullopt;
  }
  return std::nullopt;
}

// Capture of what the user sees, hears or copies, and control of other applications.
std::optional<std::string> capture(const std::string& name, const std::vector<std::string>& args) {
  static const std::set<std::string> screen = {"screencapture", "scrot", "gnome-screenshot", "grim", "maim",
                                               "flameshot", "spectacle", "imagesnap", "xwd", "ksnip", "shutter",
                                               "arecord", "rec", "parec", "pw-record", "wf-recorder", "obs"};
  if (screen.count(name)) return "records the screen, camera or microphone (" + name + ")";
  if (name == "import" && sysHas(args, {"-window", "-screen"})) return "records the screen (import -window)";
  if (name == "sox" && sysHas(args, {"-d", "--default-device"})) return "records the microphone (sox -d)";
  if (name == "ffmpeg" || name == "ffprobe" || name == "ffplay") {
    for (size_t k = 1; k + 1 < args.size(); ++k)
      if (args[k] == "-f" && sysOneOf(lower(args[k + 1]), {"avfoundation", "x11grab", "gdigrab", "dshow", "kmsgrab",
                                                           "pulse", "alsa", "v4l2", "video4linux2", "pipewire",
                                                           "fbdev", "openal", "jack", "oss", "sndio", "decklink"}))
        return "records the screen, camera or microphone (" + name + " -f " + args[k + 1] + ")";
  }
  static const std::set<std::string> clipboard = {"pbpaste", "wl-paste", "xclip-out"};
  if (clipboard.count(name)) return "reads the clipboard: other applications' data (" + name + ")";
  if (name == "xclip" && sysHas(args, {"-o", "-out"})) return "reads the clipboard: other applications' data (xclip -o)";
  if (name == "xsel" && !sysHas(args, {"-i", "--input", "-a", "--append", "-c", "--clear", "-d", "--delete", "-k",
                                       "--keep", "-x", "--exchange", "-f", "--follow", "-h", "--help"}))
    return "reads the clipboard: other applications' data (xsel)";
  static const std::set<std::string> control = {"xdotool", "ydotool", "wtype", "xte", "cliclick", "osascript",
                                                "shortcuts", "xinput", "evtest", "showkey", "logkeys", "mdfind",
                                                "lsappinfo", "kickstart", "sharing"};
  if (control.count(name)) {
    if (name == "shortcuts" && sysOneOf(sysAt(sysPositional(args), 0), {"list", "help", ""})) return std::nullopt;
    if (name == "xinput" && sysOneOf(sysAt(sysPositional(args), 0), {"list", "--list", ""})) return std::nullopt;
    if (name == "osascript")
      return "runs AppleScript, which can run any command and drive other applications (osascript)";
    if (name == "mdfind") return "searches every file on the disk through Spotlight, outside the sandbox's view (mdfind)";
    return "drives or watches other applications and their input (" + name + ")";
  }
  return std::nullopt;
}

// Handing a file or address to another application: a browser, a terminal, an app bundle.
std::optional<std::string> launch(const std::string& name, const std::vector<std::string>& args) {
  static const std::set<std::string> openers = {"open", "xdg-open", "gio", "kde-open", "kde-open5", "gnome-open",
                                                "exo-open", "sensible-browser", "x-www-browser", "www-browser",
                                                "wslview", "start"};
  if (!openers.count(name)) return std::nullopt;
  if (name == "gio" && sysAt(sysPositional(args), 0) != "open") return std::nullopt;
  if (name == "open" && sysHas(args, {"-a", "-b", "--args", "-n", "--new", "-F", "--fresh", "-j", "--hide"}))
    return "launches an application (open -a)";
  for (size_t k = 1; k < args.size(); ++k) {
    const std::string& t = args[k];
    if (sysIsOption(t)) continue;
    std::string l = lower(t);
    // A URL or URL scheme (https:, x-apple.systempreferences:, vscode:): an app handles it.
    // A page of this machine (a dev server on localhost) sends nothing anywhere.
    if (startsWith(l, "http://localhost") || startsWith(l, "https://localhost") || startsWith(l, "http://127.0.0.1") ||
        startsWith(l, "https://127.0.0.1") || startsWith(l, "http://[::1]") || startsWith(l, "http://0.0.0.0"))
      continue;
    size_t colon = l.find(':');
    if (colon != std::string::npos && colon > 1 &&
        std::all_of(l.begin(), l.begin() + static_cast<long>(colon), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '.' || c == '-';
        }))
      return "opens an address in another application (" + name + " " + t + ")";
    static const char* runnable[] = {".app",  ".command", ".tool", ".sh",      ".terminal", ".scpt",  ".applescript",
                                     ".workflow", ".pkg", ".mpkg", ".prefpane", ".webloc", ".inetloc", ".fileloc",
                                     ".desktop", ".jar",  ".action", ".shortcut", ".url"};
    std::string base = l;
    while (!base.empty() && base.back() == '/') base.pop_back();
    for (const char* r : runnable)
      if (endsWith(base, r)) return "opens a program with another application (" + name + " " + t + ")";
  }
  return std::nullopt;
}

// The keychain and trust settings: only reading certificates and decoding passes.
std::optional<std::string> keychain(const std::string& name, const std::vector<std::string>& args) {
  if (name != "security") return std::nullopt;
  std::string verb = sysAt(sysPositional(args), 0);
  if (sysOneOf(verb, {"find-certificate", "verify-cert", "cms", "show-keychain-info", "help", "error", ""}) ||
      (verb == "list-keychains" && !sysHas(args, {"-s"})))
    return std::nullopt;
  return "uses the keychain or changes trust settings (security " + verb + ")";
}

}  // namespace

std::optional<std::string> systemChange(const std::string& name, const std::vector<std::string>& args) {
  if (auto why = privilege(name)) return why;
  if (name == "getcap" && sysHas(args, {"-r"})) return "looks for programs with capabilities (privilege escalation)";
  if (auto why = persistence(name, args)) return why;
  if (auto why = settings(name, args)) return why;
  if (auto why = capture(name, args)) return why;
  if (auto why = launch(name, args)) return why;
  if (auto why = keychain(name, args)) return why;
  if (name == "machinectl") {
    std::string verb = sysAt(sysPositional(args), 0);
    if (!(verb.empty() || startsWith(verb, "list") || startsWith(verb, "show") || verb == "status"))
      return "runs or changes another machine or container (machinectl " + verb + ")";
  }
  return std::nullopt;
}

}  // namespace pine::guard
