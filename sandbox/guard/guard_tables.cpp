#include "sandbox/guard/guard_tables.h"
#include "sandbox/guard/text.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

namespace pine::guard {
namespace {

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}
bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

Interpreter spec(std::string evalShort, std::vector<std::string> evalLong = {}, std::string argShort = "",
                 std::vector<std::string> argLong = {}) {
  Interpreter i;
  i.evalShort = std::move(evalShort);
  i.evalLong = std::move(evalLong);
  i.argShort = std::move(argShort);
  i.argLong = std::move(argLong);
  return i;
}

const std::map<std::string, Interpreter>& interpreters() {
  static const std::map<std::string, Interpreter> table = [] {
    std::map<std::string, Interpreter> t;
    Interpreter python = spec("c", {}, "WX", {"--check-hash-based-pycs"});
    python.moduleFlag = true;
    for (const char* n : {"python", "pypy", "ipython", "jython", "micropython", "graalpy"}) t[n] = python;
    Interpreter node = spec("epr", {"--eval", "--print", "--require", "--import", "--loader", "--experimental-loader"},
                            "C", {"--title", "--inspect-port", "--conditions", "--input-type"});
    for (const char* n : {"node", "nodejs", "tsx", "ts-node", "esno", "ts-node-esm", "vite-node"}) t[n] = node;
    t["bun"] = spec("epr", {"--eval", "--print", "--preload", "--require"});
    t["bun"].subcommandEval = true;
    Interpreter deno = spec("", {"--eval"});
    deno.subcommandEval = true;
    deno.evalSubcommands = {"eval"};
    deno.stdinCode = true;
    t["deno"] = deno;
    Interpreter crystal = spec("");
    crystal.subcommandEval = true;
    crystal.evalSubcommands = {"eval", "i", "play"};
    t["crystal"] = crystal;
    Interpreter ruby = spec("er", {}, "ICEF");
    for (const char* n : {"ruby", "jruby", "truffleruby", "mruby"}) t[n] = ruby;
    t["irb"] = spec("r", {}, "I");
    t["perl"] = spec("eEMm");
    t["raku"] = spec("eM");
    t["perl6"] = spec("eM");
    Interpreter php = spec("rRBE", {}, "cdzFt");
    php.serverShort = "S";
    t["php"] = php;
    t["php-cgi"] = php;
    for (const char* n : {"lua", "luajit", "texlua"}) t[n] = spec("el");
    t["julia"] = spec("eE", {"--eval", "--print"}, "JCptL");
    Interpreter elixir = spec("er", {"--eval", "--rpc-eval", "-eval"}, "",
                              {"--erl", "--sname", "--name", "--cookie", "-pa", "-pz"});
    t["elixir"] = elixir;
    t["iex"] = elixir;
    t["erl"] = spec("", {"-eval", "-s", "-run", "-S"}, "", {"-sname", "-name", "-setcookie", "-pa", "-pz", "-config"});
    t["rscript"] = spec("e");
    t["r"] = spec("e", {}, "f");
    t["osascript"] = spec("e", {}, "ls");
    t["expect"] = spec("c", {}, "f");
    for (const char* n : {"tclsh", "wish", "jimsh", "jshell", "ghci", "ocaml", "swift", "irb"}) {
      if (!t.count(n)) t[n] = spec("");
    }
    for (const char* n : {"groovy", "scala", "kotlin", "kotlinc", "jrunscript", "rhino", "d8", "jjs", "ghc", "gnuplot",
                          "chezscheme", "petite", "gsi", "csi"})
      t[n] = spec("e");
    for (const char* n : {"clojure", "clj", "bb", "coffee", "qjs", "zx", "racket", "scheme"})
      t[n] = spec("e", {"--eval", "--require"});
    t["gjs"] = spec("c", {"--command"});
    t["guile"] = spec("c", {"--eval"});
    t["clisp"] = spec("x");
    t["sbcl"] = spec("", {"--eval"});
    t["ecl"] = spec("", {"-eval"});
    t["swipl"] = spec("g", {"--goal"});
    t["octave"] = spec("", {"--eval"});
    t["matlab"] = spec("", {"-batch", "-r"});
    Interpreter gdb = spec("", {"-ex", "--ex", "-iex", "--iex", "-eval-command", "--eval-command",
                                "--init-eval-command", "-init-eval-command"});
    gdb.stdinCode = false;
    t["gdb"] = gdb;
    Interpreter lldb = spec("oOkK", {"--one-line", "--one-line-before-file", "--one-line-on-crash"}, "pnfs");
    lldb.stdinCode = false;
    t["lldb"] = lldb;
    Interpreter vim = spec("c", {"--cmd"}, "tTwWSuiUs");
    vim.stdinCode = false;
    for (const char* n : {"vim", "vi", "nvim", "view", "ex", "vimdiff", "gvim", "rvim", "rview", "evim"}) t[n] = vim;
    Interpreter emacs = spec("", {"--eval", "-eval", "--execute", "-execute", "-f", "--funcall", "-funcall"});
    emacs.stdinCode = false;
    t["emacs"] = emacs;
    t["emacsclient"] = emacs;
    t["emacsclient"].evalShort = "e";
    Interpreter make = spec("E", {"--eval"}, "fCIjlWo", {"--file", "--makefile", "--directory", "--include-dir"});
    make.stdinCode = false;
    t["make"] = make;
    t["gmake"] = make;
    Interpreter pwsh = spec("", {"-c", "-command", "-e", "-ec", "-enc", "-encodedcommand", "-commandwithargs", "-cwa"});
    pwsh.evalPrefix = {"-com", "-enco", "-encodedc"};
    pwsh.argLong = {"-executionpolicy", "-ex", "-ep", "-workingdirectory", "-wd", "-configurationname", "-outputformat",
                    "-of", "-inputformat", "-if", "-settingsfile", "-windowstyle", "-w", "-version", "-v",
                    "-custompipename", "-f", "-file"};
    pwsh.caseInsensitive = true;
    t["pwsh"] = pwsh;
    t["powershell"] = pwsh;
    return t;
  }();
  return table;
}

}  // namespace

std::optional<Interpreter> interpreterSpec(const std::string& name) {
  const auto& t = interpreters();
  auto it = t.find(name);
  if (it != t.end()) return it->second;
  // python3.12, pypy3, lua5.4, php8.2, ruby3.2, perl5.36: a version after the name.
  std::string base = name;
  while (!base.empty() && (std::isdigit(static_cast<unsigned char>(base.back())) || base.back() == '.' ||
                           base.back() == '-'))
    base.pop_back();
  if (base.size() < name.size()) {
    it = t.find(base);
    if (it != t.end()) return it->second;
  }
  return std::nullopt;
}

bool isShellName(const std::string& name) {
  static const std::set<std::string> shells = {"sh",  "bash", "zsh",  "dash", "ksh",  "ksh93", "mksh", "pdksh",
                                               "oksh", "ash", "yash", "posh", "rbash", "fish", "csh",  "tcsh",
                                               "nu",  "xonsh", "elvish", "hush", "lksh", "bash5", "zsh5"};
  return shells.count(name) > 0;
}

bool isAwkName(const std::string& name) {
  return name == "awk" || name == "gawk" || name == "mawk" || name == "nawk" || name == "busybox-awk" ||
         name == "goawk" || name == "bwk";
}

bool isNetworkModule(const std::string& m) {
  static const std::set<std::string> mods = {"http.server", "SimpleHTTPServer", "CGIHTTPServer", "smtpd",
                                             "smtplib",     "ftplib",           "telnetlib",     "xmlrpc.server",
                                             "http.client", "urllib",           "urllib.request", "webbrowser",
                                             "aiosmtpd",    "wsgiref.simple_server", "pyftpdlib", "uploadserver"};
  return mods.count(m) > 0;
}

std::optional<std::string> networkTool(const std::string& name, const std::vector<std::string>& args) {
  static const std::set<std::string> tools = {
      "curl", "wget", "wget2", "aria2c", "axel", "http", "https", "httpie", "xh", "xhs", "curlie", "lynx", "links",
      "links2", "w3m", "elinks", "lwp-request", "lwp-download", "lwp-mirror", "fetch", "ftp", "tftp",
      "lftp", "ncftp", "ncftpget", "ncftpput", "sftp", "scp", "ssh", "slogin", "sshpass", "autossh", "mosh",
      "ssh-copy-id", "ssh-keyscan", "rsh", "rlogin", "rcp", "rexec", "telnet", "nc", "ncat", "netcat",
      "nc.traditional", "nc.openbsd", "pnetcat", "socat", "websocat", "wscat", "grpcurl", "nmap", "masscan", "zmap",
      "hping3", "ping", "ping6", "fping", "traceroute", "traceroute6", "tracepath", "mtr", "arping", "dig",
      "nslookup", "host", "drill", "kdig", "delv", "whois", "tcpdump", "tshark", "ngrok", "cloudflared", "bore",
      "frpc", "chisel", "tailscale", "openvpn", "stunnel", "gnutls-cli", "torsocks", "torify", "tor", "proxychains",
      "proxychains4", "mail", "mailx", "sendmail", "mutt", "swaks", "msmtp", "rclone", "s3cmd", "gsutil", "azcopy",
      "iperf", "iperf3", "smbclient", "rpcclient", "ldapsearch", "snmpwalk", "snmpget", "dnsenum", "fierce",
      "ssh-agent-forward", "xfreerdp", "rdesktop", "vncviewer", "httpx", "nuclei", "katana", "gau", "waybackurls"};
  std::string lname = lower(name);
  // Asking a tool its version or usage connects to nothing (curl --version, ssh -V).
  static const std::set<std::string> onlyAsks = {"--version", "-V", "--help", "-h", "-help", "version", "help"};
  const bool asksOnly = args.size() >= 2 && std::all_of(args.begin() + 1, args.end(), [](const std::string& a) {
    return onlyAsks.count(a) > 0;
  });
  if (asksOnly && tools.count(lname)) return std::nullopt;
  if (tools.count(lname) || (name == "GET" || name == "POST" || name == "HEAD")) return name;
  auto arg = [&](size_t k) { return k < args.size() ? args[k] : std::string(); };
  static const std::set<std::string> browsers = {
      "firefox", "google-chrome", "google-chrome-stable", "chrome", "chromium", "chromium-browser", "brave",
      "brave-browser", "microsoft-edge", "safari", "opera", "vivaldi", "epiphany", "qutebrowser", "links2", "surf"};
  if (browsers.count(lname))
    for (size_t k = 1; k < args.size(); ++k)
      if (args[k].find("://") != std::string::npos || startsWith(lower(args[k]), "www."))
        return name + " (opens an address in a browser)";
  if (lname == "rsync") {
    for (size_t k = 1; k < args.size(); ++k) {
      const std::string& a = args[k];
      if (a == "-e" || startsWith(a, "--rsh") || a.find("rsync://") != std::string::npos ||
          a.find("::") != std::string::npos)
        return "rsync to a remote host";
      if (!a.empty() && a[0] != '-' && a[0] != '/' && a[0] != '.' && a[0] != '~') {
        size_t colon = a.find(':'), slash = a.find('/');
        if (colon != std::string::npos && colon > 0 && (slash == std::string::npos || colon < slash))
          return "rsync to a remote host";
      }
    }
  }
  if (lname == "openssl") {
    std::string sub = arg(1);
    if (sub == "s_client" || sub == "s_server" || sub == "s_time" || sub == "ocsp") return "openssl " + sub;
  }
  if (lname == "getent") {
    std::string db = arg(1);
    if (db == "hosts" || startsWith(db, "ahosts")) return "getent " + db + " (DNS lookup)";
  }
  if (lname == "resolvectl" && arg(1) == "query") return "resolvectl query (DNS lookup)";
  if (lname == "aws" && arg(1) == "s3" && (arg(2) == "cp" || arg(2) == "sync" || arg(2) == "mv"))
    return "aws s3 " + arg(2);
  if (lname == "az" && arg(1) == "storage") return "az storage";
  return std::nullopt;
}

bool isPublishProgram(const std::string& name) {
  static const std::set<std::string> programs = {"semantic-release", "release-it", "np", "npm-publish", "publish",
                                                 "twine-upload", "ghr"};
  return programs.count(name) > 0;
}

std::optional<std::string> publishVerb(const std::string& name, const std::string& word, const std::string& prev) {
  std::string w = lower(word);
  auto is = [&](std::initializer_list<const char*> verbs) {
    for (const char* v : verbs)
      if (w == v) return true;
    return false;
  };
  std::string what = name + " " + word;
  if (name == "npm" || name == "pnpm" || name == "yarn" || name == "bun" || name == "cnpm" || name == "ni") {
    if (is({"publish", "unpublish", "deprecate", "login", "adduser", "add-user", "owner", "token", "dist-tag"}))
      return what;
    return std::nullopt;
  }
  if (name == "cargo" && is({"publish", "login", "owner", "yank"})) return what;
  if (name == "gem" && is({"push", "yank", "owner", "signin"})) return what;
  if (name == "twine" && is({"upload", "register"})) return what;
  if ((name == "poetry" || name == "flit" || name == "hatch" || name == "pdm" || name == "uv" || name == "rye" ||
       name == "jsr" || name == "deno" || name == "wasm-pack" || name == "lerna" || name == "changeset" ||
       name == "vsce" || name == "ovsx" || name == "nimble" || name == "opam" || name == "dart" || name == "flutter" ||
       name == "pub" || name == "goreleaser") &&
      is({"publish", "release"})) {
    if (w == "release" && name != "goreleaser") return std::nullopt;
    return what;
  }
  if ((name == "maturin" || name == "cabal" || name == "stack" || name == "luarocks" || name == "conan") &&
      is({"publish", "upload"}))
    return what;
  if (name == "dotnet" && prev == "nuget" && is({"push", "delete"})) return "dotnet nuget " + word;
  if (name == "nuget" && is({"push", "delete", "setapikey"})) return what;
  if ((name == "docker" || name == "podman" || name == "nerdctl" || name == "buildah" || name == "helm" ||
       name == "oras" || name == "crane" || name == "finch") &&
      is({"push", "login"}))
    return what;
  if (name == "skopeo" && is({"copy", "sync", "login"})) return what;
  if (name == "mvn" || name == "mvnw" || name == "maven") {
    if (w == "deploy" || startsWith(w, "deploy:") || w == "site-deploy" || w == "release:perform" ||
        w == "release:prepare")
      return what;
    return std::nullopt;
  }
  if (name == "gradle" || name == "gradlew") {
    std::string task = w.substr(w.rfind(':') == std::string::npos ? 0 : w.rfind(':') + 1);
    if ((startsWith(task, "publish") && task.find("mavenlocal") == std::string::npos) || task == "uploadarchives" ||
        task == "bintrayupload" || task == "artifactorypublish")
      return what;
    return std::nullopt;
  }
  if ((name == "gh" || name == "glab" || name == "hub" || name == "tea") &&
      ((prev == "release" && is({"create", "upload", "edit"})) || (prev == "gist" && is({"create", "edit"}))))
    return name + " " + prev + " " + word;
  if (name == "sbt") {
    std::string t = w[0] == '+' ? w.substr(1) : w;
    if (startsWith(t, "publish") && t != "publishlocal" && t != "publishm2") return what;
    if (t == "release" || t == "sonatypebundlerelease") return what;
  }
  if (name == "lein" && w == "deploy") return what;
  if (name == "mix" && (w == "hex.publish" || w == "hex.owner")) return what;
  if (name == "rebar3" && prev == "hex" && is({"publish", "owner"})) return what;
  if (name == "pod" && prev == "trunk" && is({"push", "register"})) return what;
  if ((name == "jfrog" || name == "jf") && is({"upload", "u", "npm-publish", "gp", "go-publish", "mvn-deploy"}))
    return what;
  return std::nullopt;
}

std::optional<std::string> destructiveProgram(const std::string& name, const std::string& first) {
  static const std::set<std::string> programs = {
      "mkfs", "mke2fs", "mkswap", "wipefs", "fdisk", "sfdisk", "cfdisk", "gdisk", "sgdisk", "parted", "blkdiscard",
      "shutdown", "reboot", "halt", "poweroff", "telinit", "killall5", "lvremove", "vgremove", "pvremove",
      "newfs", "mkdosfs", "mkntfs", "zerofree"};
  if (programs.count(name) || startsWith(name, "mkfs.") || startsWith(name, "newfs_") || startsWith(name, "mkfs_"))
    return name;
  if (name == "init" && (first == "0" || first == "6")) return "init " + first;
  if (name == "systemctl" && (first == "poweroff" || first == "reboot" || first == "halt" || first == "kexec" ||
                              first == "rescue" || first == "emergency" || first == "suspend" || first == "hibernate"))
    return "systemctl " + first;
  if (name == "diskutil" && (startsWith(lower(first), "erase") || startsWith(lower(first), "zero") ||
                             lower(first) == "secureerase" || lower(first) == "partitiondisk" ||
                             lower(first) == "reformat"))
    return "diskutil " + first;
  if (name == "cryptsetup" && (first == "luksFormat" || first == "erase" || first == "luksErase"))
    return "cryptsetup " + first;
  if (name == "zpool" && first == "destroy") return "zpool destroy";
  return std::nullopt;
}

std::optional<std::string> credentialCommand(const std::string& name, const std::vector<std::string>& pos,
                                             const std::vector<std::string>& all) {
  auto p = [&](size_t k) { return k < pos.size() ? pos[k] : std::string(); };
  if (name == "security") {
    std::string v = p(0);
    if (v == "find-generic-password" || v == "find-internet-password" || v == "dump-keychain" || v == "export" ||
        v == "find-key" || v == "unlock-keychain" || v == "find-identity" || v == "export-identity")
      return "security " + v;
  }
  if (name == "secret-tool" && (p(0) == "lookup" || p(0) == "search")) return "secret-tool " + p(0);
  if (name == "pass" || name == "gopass") {
    static const std::set<std::string> harmless = {"", "ls", "list", "find", "search", "version", "help", "init"};
    if (!harmless.count(p(0))) return name + " " + p(0);
  }
  if ((name == "gpg" || name == "gpg2") && (has(all, "--export-secret-keys") || has(all, "--export-secret-subkeys")))
    return "gpg --export-secret-keys";
  if (name == "gh" && p(0) == "auth" && (p(1) == "token" || (p(1) == "status" && (has(all, "-t") || has(all, "--show-token")))))
    return "gh auth " + p(1);
  if (name == "aws") {
    if (p(0) == "configure" && (p(1) == "get" || p(1) == "export-credentials")) return "aws configure " + p(1);
    if (p(0) == "secretsmanager" && p(1) == "get-secret-value") return "aws secretsmanager get-secret-value";
    if (p(0) == "ssm" && startsWith(p(1), "get-parameter") && has(all, "--with-decryption")) return "aws ssm";
    if (p(0) == "ecr" && p(1) == "get-login-password") return "aws ecr get-login-password";
    if (p(0) == "sts" && p(1) == "get-session-token") return "aws sts get-session-token";
  }
  if (name == "gcloud" && p(0) == "auth" &&
      (p(1) == "print-access-token" || p(1) == "print-identity-token" || p(2) == "print-access-token"))
    return "gcloud auth print-access-token";
  if (name == "gcloud" && p(0) == "secrets" && p(1) == "versions" && p(2) == "access") return "gcloud secrets";
  if (name == "az" && p(0) == "account" && p(1) == "get-access-token") return "az account get-access-token";
  if (name == "az" && p(0) == "keyvault" && p(1) == "secret" && (p(2) == "show" || p(2) == "download"))
    return "az keyvault secret";
  if ((name == "kubectl" || name == "oc") && p(0) == "config" && p(1) == "view" &&
      (has(all, "--raw") || has(all, "--flatten")))
    return name + " config view --raw";
  if ((name == "kubectl" || name == "oc") && (p(0) == "get" || p(0) == "describe") &&
      (p(1) == "secret" || p(1) == "secrets" || startsWith(p(1), "secret/") || startsWith(p(1), "secrets/")))
    return name + " " + p(0) + " secret";
  if (name == "vault" && (p(0) == "read" || (p(0) == "kv" && p(1) == "get") || (p(0) == "token" && p(1) == "lookup")))
    return "vault " + p(0);
  if (name == "op" && (p(0) == "read" || p(0) == "inject" || ((p(0) == "item" || p(0) == "document") && p(1) == "get")))
    return "op " + p(0);
  if ((name == "bw" || name == "lpass") && (p(0) == "get" || p(0) == "show" || p(0) == "export")) return name + " " + p(0);
  if (name == "heroku" && p(0) == "auth:token") return "heroku auth:token";
  if (name == "doppler" && p(0) == "secrets") return "doppler secrets";
  if (startsWith(name, "docker-credential-") && (p(0) == "get" || p(0) == "list")) return name + " " + p(0);
  if (name == "keyctl" && (p(0) == "print" || p(0) == "read" || p(0) == "pipe")) return "keyctl " + p(0);
  return std::nullopt;
}

EnvRisk envRisk(const std::string& name) {
  static const std::set<std::string> code = {
      "BASH_ENV", "ENV", "PROMPT_COMMAND", "SHELLOPTS", "BASHOPTS", "PS0", "PS4", "PERL5OPT", "PERL5DB",
      "PERLDB_OPTS", "RUBYOPT", "PYTHONSTARTUP", "PYTHONINSPECT", "PYTHONHOME", "PYTHONBREAKPOINT", "ZDOTDIR",
      "GCONV_PATH", "PHPRC", "PHP_INI_SCAN_DIR", "OPENSSL_CONF", "OPENSSL_ENGINES", "OPENSSL_MODULES",
      "DOTNET_STARTUP_HOOKS", "CORECLR_ENABLE_PROFILING", "CORECLR_PROFILER", "CORECLR_PROFILER_PATH",
      "COR_ENABLE_PROFILING", "COR_PROFILER", "COR_PROFILER_PATH", "R_PROFILE", "R_PROFILE_USER", "R_ENVIRON",
      "R_ENVIRON_USER", "NODE_REPL_EXTERNAL_MODULE", "MAKEFILES", "VIMINIT", "EXINIT", "GVIMINIT", "MYVIMRC",
      "IPYTHONDIR", "JUPYTER_CONFIG_DIR", "PYTHONUSERBASE", "BUNDLE_GEMFILE", "GEMRC", "ELECTRON_RUN_AS_NODE",
      "JAVA_HOME_OVERRIDE", "LD", "PERL5SHELL", "LUA_INIT"};
  if (code.count(name) || startsWith(name, "LD_") || startsWith(name, "DYLD_") || startsWith(name, "BASH_FUNC_") ||
      startsWith(name, "LUA_INIT"))
    return EnvRisk::Code;
  static const std::set<std::string> config = {
      "HOME", "XDG_CONFIG_HOME", "XDG_CONFIG_DIRS", "XDG_DATA_HOME", "XDG_DATA_DIRS", "KUBECONFIG",
      "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE", "DOCKER_CONFIG", "CARGO_HOME", "GRADLE_USER_HOME",
      "PIP_CONFIG_FILE", "CLOUDSDK_CONFIG", "CURL_HOME", "WGETRC", "BUNDLE_USER_CONFIG", "BUNDLE_APP_CONFIG",
      "YARN_RC_FILENAME", "COMPOSER_HOME", "MAVEN_CONFIG", "RUSTUP_HOME", "GNUPGHOME", "PASSWORD_STORE_DIR"};
  if (config.count(name)) return EnvRisk::Config;
  static const std::set<std::string> index = {
      "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_TRUSTED_HOST", "UV_INDEX_URL",
      "UV_EXTRA_INDEX_URL", "UV_INDEX", "UV_DEFAULT_INDEX", "UV_FIND_LINKS", "YARN_REGISTRY",
      "YARN_NPM_REGISTRY_SERVER", "BUN_CONFIG_REGISTRY", "GOPROXY", "GONOSUMDB", "GONOSUMCHECK", "GOINSECURE",
      "GOSUMDB", "GOPRIVATE", "GONOPROXY", "GOVCS", "GOTOOLCHAIN", "PDM_PYPI_URL", "HOMEBREW_BOTTLE_DOMAIN",
      "HOMEBREW_API_DOMAIN", "HOMEBREW_ARTIFACT_DOMAIN", "HOMEBREW_BREW_GIT_REMOTE", "HOMEBREW_CORE_GIT_REMOTE",
      "RUSTUP_DIST_SERVER", "RUSTUP_UPDATE_ROOT", "CONDA_CHANNELS", "NUGET_PACKAGES_SOURCE", "GEM_SOURCE",
      // Which servers programs trust, and which proxy carries their traffic.
      "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "PIP_CERT", "NODE_EXTRA_CA_CERTS",
      "NODE_TLS_REJECT_UNAUTHORIZED", "PYTHONHTTPSVERIFY", "HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy",
      "http_proxy", "all_proxy", "FTP_PROXY", "ftp_proxy", "SOCKS_PROXY", "socks_proxy"};
  if (index.count(name) || startsWith(name, "CARGO_REGISTRIES_") || startsWith(name, "POETRY_REPOSITORIES_") ||
      startsWith(name, "BUNDLE_MIRROR__") || startsWith(name, "PIP_INDEX"))
    return EnvRisk::Index;
  static const std::set<std::string> program = {
      "PAGER", "MANPAGER", "EDITOR", "VISUAL", "SYSTEMD_PAGER", "SYSTEMD_EDITOR", "BROWSER", "SSH_ASKPASS",
      "SUDO_ASKPASS", "LESSOPEN", "LESSCLOSE", "SHELL", "CONFIG_SHELL", "TERMINAL", "FCEDIT", "SVN_EDITOR",
      "HGEDITOR", "KUBE_EDITOR", "GH_EDITOR", "GH_PAGER", "GH_BROWSER", "BAT_PAGER", "DELTA_PAGER", "PSQL_PAGER",
      "PSQL_EDITOR", "CC", "CXX", "CPP", "AR", "AS", "NM", "RANLIB", "STRIP", "OBJCOPY", "FC", "F77", "RUSTC",
      "RUSTDOC", "RUSTC_WRAPPER", "RUSTC_WORKSPACE_WRAPPER", "RUSTC_LINKER", "CARGO_BUILD_RUSTC",
      "CARGO_BUILD_RUSTC_WRAPPER", "CARGO_BUILD_RUSTC_WORKSPACE_WRAPPER", "CARGO_BUILD_RUSTDOC",
      "CMAKE_C_COMPILER_LAUNCHER", "CMAKE_CXX_COMPILER_LAUNCHER", "PKG_CONFIG", "CCACHE_PREFIX", "GIT_SSH"};
  if (program.count(name) ||
      (startsWith(name, "CARGO_TARGET_") && (endsWith(name, "_RUNNER") || endsWith(name, "_LINKER"))))
    return EnvRisk::Program;
  static const std::set<std::string> paths = {
      "PATH", "PYTHONPATH", "NODE_PATH", "PERL5LIB", "PERLLIB", "RUBYLIB", "CLASSPATH", "LUA_PATH", "LUA_CPATH",
      "TCLLIBPATH", "EMACSLOADPATH", "GEM_PATH", "GEM_HOME", "JULIA_LOAD_PATH", "JULIA_DEPOT_PATH", "R_LIBS",
      "R_LIBS_USER", "R_LIBS_SITE", "PSModulePath", "GUILE_LOAD_PATH", "OCAMLPATH", "GOPATH"};
  if (paths.count(name)) return EnvRisk::PathList;
  static const std::set<std::string> options = {
      "NODE_OPTIONS", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "JAVA_OPTS", "MAVEN_OPTS",
      "GRADLE_OPTS", "SBT_OPTS", "ANT_OPTS", "CATALINA_OPTS", "KOTLIN_OPTS", "TAR_OPTIONS", "MAKEFLAGS", "MFLAGS",
      "GNUMAKEFLAGS", "GOFLAGS", "LESS", "MORE", "RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", "RUSTDOCFLAGS",
      "PYTHONWARNINGS", "ZIPOPT", "UNZIP", "BZIP2", "GZIP", "XZ_OPT", "ZSTD_CLEVEL"};
  if (options.count(name)) return EnvRisk::Options;
  // npm reads npm_config_<key> in any case, - and _ alike.
  std::string l = lower(name);
  if (startsWith(l, "npm_config_")) {
    std::string key = l.substr(11);
    for (char& c : key)
      if (c == '-') c = '_';
    if (key == "script_shell" || key == "shell" || key == "git" || key == "editor" || key == "browser")
      return EnvRisk::Program;
    if (key == "registry" || endsWith(key, ":registry") || endsWith(key, "_registry")) return EnvRisk::Index;
    if (key == "node_options") return EnvRisk::Options;
    if (key == "userconfig" || key == "globalconfig" || key == "onload_script" || key == "init_module" ||
        key == "prefix" || key == "cache")
      return EnvRisk::Config;
  }
  return EnvRisk::None;
}

bool writesOutputOption(const std::string& name) {
  static const std::set<std::string> names = {"sort", "shuf", "gcc", "g++", "cc", "c++", "clang", "clang++",
                                              "ld", "go", "rustc", "pandoc", "base64", "uniq", "tsc", "javac"};
  return names.count(name) > 0;
}

bool isSecretName(const std::string& variable) {
  std::string v = upper(variable);
  if (v.find("AUTHOR") != std::string::npos) return false;
  static const char* words[] = {"TOKEN",       "SECRET",      "PASSWORD",  "PASSWD",       "PASSPHRASE",
                                "API_KEY",     "APIKEY",      "ACCESS_KEY", "PRIVATE_KEY", "CREDENTIAL",
                                "DATABASE_URL", "SIGNING_KEY", "COOKIE",    "SESSION_KEY",  "ENCRYPTION_KEY"};
  for (const char* w : words)
    if (v.find(w) != std::string::npos) return true;
  return endsWith(v, "_KEY") || endsWith(v, "_PAT") || endsWith(v, "_PASS") || endsWith(v, "_PWD") ||
         startsWith(v, "PAT_");
}

bool looksForSecrets(const std::string& pattern) {
  std::string p = lower(pattern);
  static const char* words[] = {"token", "secret", "passw", "api_key", "apikey", "access_key", "private_key",
                                "credential", "aws_", "_key", "auth", "pat_"};
  for (const char* w : words)
    if (p.find(w) != std::string::npos) return true;
  return false;
}

bool gitSafeEnv(const std::string& name) {
  static const std::set<std::string> safe = {
      "GIT_AUTHOR_NAME",   "GIT_AUTHOR_EMAIL",     "GIT_AUTHOR_DATE",     "GIT_COMMITTER_NAME",
      "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE", "GIT_TERMINAL_PROMPT", "GIT_CURL_VERBOSE",
      "GIT_FLUSH",         "GIT_OPTIONAL_LOCKS",   "GIT_MERGE_AUTOEDIT",  "GIT_PROGRESS_DELAY",
      "GIT_ADVICE",        "GIT_NO_REPLACE_OBJECTS", "GIT_LITERAL_PATHSPECS", "GIT_REDACT_COOKIES",
      "GIT_DEFAULT_HASH",  "GIT_QUIET",            "GIT_MERGE_VERBOSITY", "GIT_NOGLOB_PATHSPECS"};
  return safe.count(name) > 0 || startsWith(name, "GIT_TRACE");
}

bool gitSafeConfigKey(const std::string& key) {
  static const char* safe[] = {"user.",           "color.",          "advice.",          "i18n.",
                               "log.",            "status.",         "column.",          "init.defaultbranch",
                               "commit.gpgsign",  "commit.verbose",  "commit.cleanup",   "tag.gpgsign",
                               "pull.rebase",     "pull.ff",         "push.default",     "push.autosetupremote",
                               "fetch.prune",     "rebase.autosquash", "rebase.autostash", "merge.conflictstyle",
                               "merge.ff",        "diff.renames",    "diff.algorithm",   "diff.colormoved",
                               "diff.noprefix",   "diff.mnemonicprefix", "safe.directory", "gc.auto",
                               "help.autocorrect", "branch.autosetupmerge", "branch.autosetuprebase",
                               "protocol.version", "feature.manyfiles", "index.version", "core.autocrlf",
                               "core.eol", "core.filemode", "core.ignorecase", "core.quotepath", "core.safecrlf",
                               "core.whitespace", "core.precomposeunicode", "core.longpaths", "core.symlinks",
                               "core.abbrev", "fetch.parallel",
                               "rerere.enabled", "blame.ignorerevsfile", "format.signoff", "am.threeway"};
  for (const char* s : safe) {
    std::string e(s);
    if (e.back() == '.' ? startsWith(key, e) : key == e) return true;
  }
  return false;
}

std::optional<std::string> gitBlockedSubcommand(const std::string& sub) {
  static const std::map<std::string, std::string> blocked = {
      {"daemon", "serves the repository on the network"},
      {"instaweb", "starts a web server"},
      {"http-backend", "runs a git transport program directly"},
      {"upload-pack", "runs a git transport program directly"},
      {"receive-pack", "runs a git transport program directly"},
      {"upload-archive", "runs a git transport program directly"},
      {"shell", "runs a git transport program directly"},
      {"remote-ext", "runs a command as a transport"},
      {"remote-fd", "runs a git transport program directly"},
      {"send-email", "sends mail"},
      {"imap-send", "sends mail"},
      {"credential", "reads git credentials"},
      {"credential-store", "reads git credentials"},
      {"credential-cache", "reads git credentials"},
      {"credential-osxkeychain", "reads git credentials"},
      {"credential-libsecret", "reads git credentials"},
      {"credential-manager", "reads git credentials"},
  };
  auto it = blocked.find(sub);
  if (it == blocked.end()) return std::nullopt;
  return it->second;
}

}  // namespace pine::guard
