//! The server command line, parsed once.
//!
//! Every part of mcpjail that looks at a server's command — scope derivation (which argv entries
//! are data paths), the jail's runtime discovery (which script or package it runs), naming,
//! pins and install — reads it through [`ServerCommand`], so they cannot disagree about where a
//! launcher's own options end and the server's arguments begin.
//!
//! A command is one of:
//! * a **package runner** (`npx`, `npm exec`, `pnpm dlx`, `bunx`, `yarn dlx`, `uvx`,
//!   `uv tool run`, `uv run`, `pipx run`): it installs or finds a package, then runs a command
//!   from it. The package is runtime, never data; the runner's resolve step is the user's
//!   trusted tool and runs outside the jail (see `sandbox::launcher`);
//! * an **interpreter** (`node`, `deno`, `bun`, `python`, `sh`) running a script file, a module
//!   (`python -m pkg`) or inline code (`-c`/`-e`);
//! * a **native** program (a binary, or a `#!` script found on `PATH`).
//!
//! Parsing is pure: no file is touched, so the same argv always gives the same model.

use std::path::Path;

/// How the server is launched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Launcher {
    /// A binary or `#!` script: every argument is the server's.
    Native,
    /// `node`/`nodejs`/`tsx`/`ts-node` [opts] script args.
    Node,
    /// `deno run [opts] script args`.
    Deno,
    /// `bun [run] [opts] script args`.
    Bun,
    /// `python [opts] script args`, `python -m module args`, `python -c code`.
    Python,
    /// `sh`/`bash` [opts] script args, or `-c code`.
    Shell,
    /// A package runner: which one, and where the package and the command it runs come from.
    Runner(Runner),
}

/// The package runners mcpjail knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runner {
    /// `npx [opts] pkg args` / `npx -p pkg cmd args`.
    Npx,
    /// `npm exec [opts] -- cmd args` / `npm x pkg`.
    NpmExec,
    /// `pnpm dlx pkg args`.
    PnpmDlx,
    /// `bunx pkg args`.
    Bunx,
    /// `yarn dlx pkg args`.
    YarnDlx,
    /// `uvx [opts] pkg args` / `uv tool run [opts] pkg args`.
    Uvx,
    /// `uv [--directory D] run [opts] script-or-command args`: a project's `.venv`.
    UvRun,
    /// `pipx run [--spec S] pkg args`.
    PipxRun,
}

impl Runner {
    /// The runner as users write it, for messages.
    pub fn label(self) -> &'static str {
        match self {
            Runner::Npx => "npx",
            Runner::NpmExec => "npm exec",
            Runner::PnpmDlx => "pnpm dlx",
            Runner::Bunx => "bunx",
            Runner::YarnDlx => "yarn dlx",
            Runner::Uvx => "uvx",
            Runner::UvRun => "uv run",
            Runner::PipxRun => "pipx run",
        }
    }

    /// Node package runners (npm registry) as opposed to Python ones.
    pub fn is_node(self) -> bool {
        matches!(
            self,
            Runner::Npx | Runner::NpmExec | Runner::PnpmDlx | Runner::Bunx | Runner::YarnDlx
        )
    }
}

/// One server command line, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerCommand {
    /// The whole command line as given.
    pub argv: Vec<String>,
    pub launcher: Launcher,
    /// Index (into `argv`) of the script file an interpreter runs (`node x.js`, `uv run x.py`).
    pub script: Option<usize>,
    /// `python -m MODULE`.
    pub module: Option<String>,
    /// A package runner's package specs (`@scope/pkg@1.2`, `mcp-server-git==1.0`), in order.
    pub packages: Vec<String>,
    /// The command a runner runs, when named apart from the package (`npx -p pkg CMD`,
    /// `uvx --from pkg CMD`, `uv run CMD`). `None`: the package's own (default) command.
    pub package_command: Option<String>,
    /// Indexes of launcher option values that name files the launcher reads itself
    /// (`node --require x.js`, `--env-file .env`, `deno --config deno.json`).
    pub launcher_files: Vec<usize>,
    /// `node --env-file F` / `uv run --env-file F`: read by the launcher, not the server.
    pub env_files: Vec<usize>,
    /// `uv --directory D` / `--project D`: where the runner (and the server) runs.
    pub directory: Option<String>,
    /// Inline code (`-c`, `-e`): no script file.
    pub inline_code: bool,
    /// Index of the first argument that is the server's own.
    pub server_args_start: usize,
}

impl ServerCommand {
    /// Parse `argv` (program first). An empty argv gives a `Native` command with no program.
    pub fn parse(argv: &[String]) -> ServerCommand {
        let mut cmd = ServerCommand {
            argv: argv.to_vec(),
            launcher: Launcher::Native,
            script: None,
            module: None,
            packages: Vec::new(),
            package_command: None,
            launcher_files: Vec::new(),
            env_files: Vec::new(),
            directory: None,
            inline_code: false,
            server_args_start: argv.len().min(1),
        };
        let Some(program) = argv.first() else {
            return cmd;
        };
        let base = base_name(program);
        match base.as_str() {
            "node" | "nodejs" | "tsx" | "ts-node" => cmd.parse_interpreter(Launcher::Node, 1),
            "deno" => {
                // `deno run [opts] script`; `deno script` is accepted by newer Denos too.
                let start = if argv.get(1).is_some_and(|a| a == "run") {
                    2
                } else {
                    1
                };
                cmd.parse_interpreter(Launcher::Deno, start)
            }
            "bun" => match argv.get(1).map(String::as_str) {
                Some("x") => cmd.parse_runner(Runner::Bunx, 2),
                Some("run") => cmd.parse_interpreter(Launcher::Bun, 2),
                _ => cmd.parse_interpreter(Launcher::Bun, 1),
            },
            "sh" | "bash" | "dash" | "zsh" => cmd.parse_interpreter(Launcher::Shell, 1),
            "npx" | "pnpx" => cmd.parse_runner(Runner::Npx, 1),
            "bunx" => cmd.parse_runner(Runner::Bunx, 1),
            "uvx" => cmd.parse_runner(Runner::Uvx, 1),
            "npm" | "pnpm" | "yarn" | "pipx" => {
                let runner = match (base.as_str(), argv.get(1).map(String::as_str)) {
                    ("npm", Some("exec" | "x")) => Some(Runner::NpmExec),
                    ("pnpm", Some("dlx")) => Some(Runner::PnpmDlx),
                    ("yarn", Some("dlx")) => Some(Runner::YarnDlx),
                    ("pipx", Some("run")) => Some(Runner::PipxRun),
                    _ => None,
                };
                if let Some(r) = runner {
                    cmd.parse_runner(r, 2);
                }
            }
            "uv" => cmd.parse_uv(),
            b if b.starts_with("python") || b.starts_with("pypy") => {
                cmd.parse_interpreter(Launcher::Python, 1)
            }
            _ => {}
        }
        cmd
    }

    /// The program as written (`npx`, `/usr/bin/node`, `./server`).
    pub fn program(&self) -> &str {
        self.argv.first().map(String::as_str).unwrap_or("")
    }

    /// The server's own arguments (after the launcher's options, script and package).
    pub fn server_args(&self) -> &[String] {
        &self.argv[self.server_args_start.min(self.argv.len())..]
    }

    /// The package runner, if this is one.
    pub fn runner(&self) -> Option<Runner> {
        match self.launcher {
            Launcher::Runner(r) => Some(r),
            _ => None,
        }
    }

    /// The script file as written, if an interpreter runs one.
    pub fn script(&self) -> Option<&str> {
        self.script
            .and_then(|i| self.argv.get(i))
            .map(String::as_str)
    }

    /// argv entries (indexes) that name runtime files, not data: the script, files the
    /// launcher itself reads, the `--directory` of a runner.
    pub fn runtime_arg_indexes(&self) -> Vec<usize> {
        let mut out: Vec<usize> = self.script.into_iter().collect();
        out.extend(self.launcher_files.iter().copied());
        out.sort_unstable();
        out.dedup();
        out
    }

    /// A short label for the server: the package's name (`server-filesystem` for
    /// `npx -y @modelcontextprotocol/server-filesystem /dir`), the module (`python -m
    /// mcp_server_git`), the script's stem (`python server.py` → `server`), else the program.
    pub fn default_name(&self) -> String {
        let name = if let Some(c) = &self.package_command {
            stem(c)
        } else if let Some(p) = self.packages.first() {
            stem(&package_name(p))
        } else if let Some(m) = &self.module {
            m.split('.').next().unwrap_or(m).to_string()
        } else if let Some(s) = self.script() {
            script_label(s)
        } else if matches!(self.launcher, Launcher::Native) || self.inline_code {
            stem(self.program())
        } else {
            // An interpreter with nothing to run (`node -e`, `sh -c`): the interpreter.
            stem(self.program())
        };
        if name.is_empty() {
            "server".into()
        } else {
            name
        }
    }

    /// Who this server is, for keying what is remembered about it (tool pins): for a package
    /// runner, the runner and the package specs as given (`npx:@scope/pkg@1.2.3`; the version
    /// is part of the spec when pinned) and the command it runs, without the server's own
    /// arguments (a directory to serve does not change the tools); otherwise the whole
    /// command, with the program and the script made absolute against `cwd` (two `index.js`
    /// in two directories are two servers).
    pub fn identity(&self, cwd: &Path) -> String {
        if let (Some(runner), false) = (self.runner(), self.packages.is_empty()) {
            let mut id = format!("{}:{}", runner.label(), self.packages.join(" "));
            if let Some(c) = &self.package_command {
                id.push(' ');
                id.push_str(c);
            }
            return id;
        }
        let absolute = |a: &str| -> String {
            let p = Path::new(a);
            if p.is_absolute() {
                return a.to_string();
            }
            let joined = cwd.join(p);
            joined
                .canonicalize()
                .unwrap_or(joined)
                .display()
                .to_string()
        };
        let argv: Vec<String> = self
            .argv
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let is_program_path = i == 0 && a.contains('/');
                if is_program_path || Some(i) == self.script {
                    absolute(a)
                } else {
                    a.clone()
                }
            })
            .collect();
        serde_json::Value::from(argv).to_string()
    }

    /// `node [opts] script args` and the other interpreters.
    fn parse_interpreter(&mut self, launcher: Launcher, start: usize) {
        self.launcher = launcher.clone();
        let mut i = start;
        while i < self.argv.len() {
            let a = self.argv[i].as_str();
            if a == "--" {
                i += 1;
                break;
            }
            if !a.starts_with('-') || a == "-" {
                break;
            }
            match launcher {
                Launcher::Python if a == "-m" || (a.starts_with("-m") && a.len() > 2) => {
                    let (module, next) = if a == "-m" {
                        (self.argv.get(i + 1).cloned(), i + 2)
                    } else {
                        (Some(a[2..].to_string()), i + 1)
                    };
                    self.module = module;
                    self.server_args_start = next.min(self.argv.len());
                    return;
                }
                Launcher::Python if a == "-c" => return self.inline(i + 2),
                Launcher::Node | Launcher::Bun
                    if matches!(a, "-e" | "--eval" | "-p" | "--print") =>
                {
                    return self.inline(i + 2)
                }
                Launcher::Deno if a == "--eval" => return self.inline(i + 2),
                Launcher::Shell if a == "-c" => return self.inline(i + 2),
                _ => {}
            }
            let (opt, inline_value) = match a.split_once('=') {
                Some((o, v)) if a.starts_with("--") => (o, Some(v)),
                _ => (a, None),
            };
            let kind = interpreter_option(&launcher, opt);
            let value_index = match (kind, inline_value) {
                (OptionValue::None, _) => None,
                (_, Some(_)) => Some(i),
                (_, None) => {
                    i += 1;
                    (i < self.argv.len()).then_some(i)
                }
            };
            if let Some(v) = value_index {
                match kind {
                    OptionValue::File => self.launcher_files.push(v),
                    OptionValue::EnvFile => self.env_files.push(v),
                    OptionValue::Other | OptionValue::None => {}
                }
            }
            i += 1;
        }
        if i < self.argv.len() {
            self.script = Some(i);
            i += 1;
        }
        self.server_args_start = i.min(self.argv.len());
    }

    fn inline(&mut self, server_args_start: usize) {
        self.inline_code = true;
        self.server_args_start = server_args_start.min(self.argv.len());
    }

    /// `npx [opts] pkg args`, `uvx [opts] pkg args`, `pipx run [opts] pkg args`, ...
    fn parse_runner(&mut self, runner: Runner, start: usize) {
        self.launcher = Launcher::Runner(runner);
        let mut i = start;
        let mut explicit_packages = false;
        while i < self.argv.len() {
            let a = self.argv[i].as_str();
            if a == "--" {
                i += 1;
                break;
            }
            if !a.starts_with('-') || a == "-" {
                break;
            }
            let (opt, inline_value) = match a.split_once('=') {
                Some((o, v)) if a.starts_with("--") => (o, Some(v.to_string())),
                _ => (a, None),
            };
            let takes_value = runner_option_takes_value(runner, opt);
            let value = if takes_value {
                match inline_value {
                    Some(v) => Some(v),
                    None => {
                        i += 1;
                        self.argv.get(i).cloned()
                    }
                }
            } else {
                None
            };
            if let Some(v) = value {
                match opt {
                    "-p" | "--package" if runner.is_node() => {
                        self.packages.push(v);
                        explicit_packages = true;
                    }
                    "--from" | "--spec" => {
                        self.packages.push(v);
                        explicit_packages = true;
                    }
                    "--env-file" => self.env_files.push(i),
                    "--directory" | "--project" => self.directory = Some(v),
                    _ => {}
                }
            }
            i += 1;
        }
        if i < self.argv.len() {
            if explicit_packages {
                self.package_command = Some(self.argv[i].clone());
            } else {
                self.packages.push(self.argv[i].clone());
            }
            i += 1;
        }
        self.server_args_start = i.min(self.argv.len());
    }

    /// `uv [global opts] run [opts] target args`, `uv tool run ...`, `uv --directory D run ...`.
    fn parse_uv(&mut self) {
        // Global options may come before the subcommand.
        let mut i = 1;
        let mut directory = None;
        while i < self.argv.len() {
            let a = self.argv[i].as_str();
            if !a.starts_with('-') {
                break;
            }
            let (opt, inline_value) = match a.split_once('=') {
                Some((o, v)) if a.starts_with("--") => (o, Some(v.to_string())),
                _ => (a, None),
            };
            if runner_option_takes_value(Runner::UvRun, opt) {
                let v = match inline_value {
                    Some(v) => Some(v),
                    None => {
                        i += 1;
                        self.argv.get(i).cloned()
                    }
                };
                if matches!(opt, "--directory" | "--project") {
                    directory = v;
                }
            }
            i += 1;
        }
        match (
            self.argv.get(i).map(String::as_str),
            self.argv.get(i + 1).map(String::as_str),
        ) {
            (Some("run"), _) => {
                self.parse_runner(Runner::UvRun, i + 1);
                // `uv run X`: X is a script (`*.py`) or a command from the project's venv;
                // there is no package.
                if let Some(target) = self.packages.pop() {
                    let at = self.server_args_start.saturating_sub(1);
                    if target.ends_with(".py") || target.ends_with(".pyw") {
                        self.script = Some(at);
                    } else {
                        self.package_command = Some(target);
                    }
                }
            }
            (Some("tool"), Some("run")) => self.parse_runner(Runner::Uvx, i + 2),
            _ => {}
        }
        if self.directory.is_none() {
            self.directory = directory;
        }
    }
}

/// What an interpreter option's value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OptionValue {
    /// The option takes no separate value.
    None,
    /// A file the launcher reads (runtime).
    File,
    /// An environment file the launcher reads (its variables go to the server).
    EnvFile,
    /// Some other value (a name, a number, a condition).
    Other,
}

fn interpreter_option(launcher: &Launcher, opt: &str) -> OptionValue {
    match launcher {
        Launcher::Node | Launcher::Bun => match opt {
            "-r"
            | "--require"
            | "--import"
            | "--loader"
            | "--experimental-loader"
            | "--preload" => OptionValue::File,
            "--env-file" | "--env-file-if-exists" => OptionValue::EnvFile,
            "-C" | "--conditions" | "--title" | "--input-type" => OptionValue::Other,
            _ => OptionValue::None,
        },
        Launcher::Deno => match opt {
            "-c" | "--config" | "--import-map" | "--lock" => OptionValue::File,
            "--env-file" => OptionValue::EnvFile,
            _ => OptionValue::None,
        },
        Launcher::Python => match opt {
            "-W" | "-X" => OptionValue::Other,
            _ => OptionValue::None,
        },
        Launcher::Shell | Launcher::Native | Launcher::Runner(_) => OptionValue::None,
    }
}

/// Options of package runners that take a separate value.
fn runner_option_takes_value(runner: Runner, opt: &str) -> bool {
    if runner.is_node() {
        return matches!(
            opt,
            "-p" | "--package"
                | "-c"
                | "--call"
                | "--registry"
                | "--cache"
                | "--userconfig"
                | "--prefix"
                | "-w"
                | "--workspace"
                | "--loglevel"
        );
    }
    matches!(
        opt,
        "--from"
            | "--with"
            | "--with-editable"
            | "--with-requirements"
            | "-w"
            | "--python"
            | "-p"
            | "--spec"
            | "--directory"
            | "--project"
            | "--package"
            | "--extra"
            | "--group"
            | "--env-file"
            | "--cache-dir"
            | "--config-file"
            | "--index"
            | "--default-index"
            | "--index-url"
            | "-i"
            | "--extra-index-url"
            | "--find-links"
            | "-f"
            | "--constraints"
            | "-c"
            | "--overrides"
            | "--color"
            | "--pip-args"
    )
}

/// The file name of a path-or-name (`/usr/bin/node` → `node`).
fn base_name(program: &str) -> String {
    Path::new(program)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// A package spec's name: `@scope/pkg@1.2` → `@scope/pkg`, `mcp-server-git==1.0` →
/// `mcp-server-git`, `pkg[extra]>=1` → `pkg`, `pkg@latest` → `pkg`.
pub fn package_name(spec: &str) -> String {
    let (scope, rest) = match spec.strip_prefix('@') {
        Some(r) => match r.split_once('/') {
            Some((s, rest)) => (format!("@{s}/"), rest),
            None => (String::new(), spec),
        },
        None => (String::new(), spec),
    };
    let end = rest
        .find(['@', '=', '<', '>', '~', '!', '[', ';', ' '])
        .unwrap_or(rest.len());
    format!("{scope}{}", &rest[..end])
}

/// Script names that say nothing about the server (`dist/index.js`, `server.py`) and the
/// build directories they sit in: the label comes from the first directory above them that
/// says more, so two different `…/index.js` servers do not share a name (and with it pins and
/// a state directory).
const GENERIC_SCRIPT_STEMS: &[&str] = &[
    "index", "main", "server", "app", "cli", "__main__", "mod", "run", "start",
];
const GENERIC_DIRS: &[&str] = &[
    "dist",
    "build",
    "lib",
    "src",
    "bin",
    "out",
    "build-output",
    "esm",
    "cjs",
];

/// `python /opt/weather/server.py` → `weather`; `node ~/x/mcp-notes/dist/index.js` →
/// `mcp-notes`; `node tools.js` → `tools`; a generic name with nothing above it stays itself.
fn script_label(script: &str) -> String {
    let own = stem(script);
    if !GENERIC_SCRIPT_STEMS.contains(&own.as_str()) {
        return own;
    }
    let parts: Vec<&str> = script.split('/').collect();
    parts
        .iter()
        .rev()
        .skip(1)
        .find(|d| !d.is_empty() && *d != &"." && *d != &".." && !GENERIC_DIRS.contains(d))
        .map(|d| stem(d))
        .unwrap_or(own)
}

/// A label from a path, package or script: the last component, without a scope, a version or
/// a script extension.
fn stem(s: &str) -> String {
    let s = s.trim_end_matches('/');
    let last = s.rsplit('/').next().unwrap_or(s);
    let last = match last.rfind('@') {
        Some(i) if i > 0 => &last[..i],
        _ => last,
    };
    let last = [".py", ".js", ".mjs", ".cjs", ".ts", ".mts", ".rb", ".sh"]
        .iter()
        .find_map(|ext| last.strip_suffix(ext))
        .unwrap_or(last);
    last.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_is_the_package_or_the_whole_command_made_absolute() {
        let v = |s: &str| -> Vec<String> { s.split_whitespace().map(String::from).collect() };
        let cwd = Path::new("/nonexistent/work");
        let a = ServerCommand::parse(&v("npx -y @scope/pkg@1.2.3 /data")).identity(cwd);
        let b = ServerCommand::parse(&v("npx -y @scope/pkg@1.2.3 /other")).identity(cwd);
        assert_eq!(a, "npx:@scope/pkg@1.2.3");
        assert_eq!(
            a, b,
            "the server's own arguments do not make another server"
        );
        assert_ne!(
            a,
            ServerCommand::parse(&v("npx -y @scope/pkg@1.2.4")).identity(cwd)
        );
        let x = ServerCommand::parse(&v("node index.js")).identity(cwd);
        let y = ServerCommand::parse(&v("node index.js")).identity(Path::new("/nonexistent/b"));
        assert_ne!(x, y, "two index.js in two directories");
        assert!(x.contains("/nonexistent/work/index.js"), "{x}");
    }

    fn parse(s: &str) -> ServerCommand {
        ServerCommand::parse(&s.split_whitespace().map(String::from).collect::<Vec<_>>())
    }

    /// One row per launch style: (command, launcher, script, packages, package command,
    /// server args, default name).
    #[test]
    fn launcher_table() {
        #[allow(clippy::type_complexity)]
        let rows: &[(
            &str,
            Launcher,
            Option<&str>,
            &[&str],
            Option<&str>,
            &[&str],
            &str,
        )] = &[
            (
                "npx -y @modelcontextprotocol/server-filesystem /home/me/p",
                Launcher::Runner(Runner::Npx),
                None,
                &["@modelcontextprotocol/server-filesystem"],
                None,
                &["/home/me/p"],
                "server-filesystem",
            ),
            (
                "npx --yes -p @acme/tools@2.0.1 acme-mcp --root .",
                Launcher::Runner(Runner::Npx),
                None,
                &["@acme/tools@2.0.1"],
                Some("acme-mcp"),
                &["--root", "."],
                "acme-mcp",
            ),
            (
                "npx -y pkg@1.2.3",
                Launcher::Runner(Runner::Npx),
                None,
                &["pkg@1.2.3"],
                None,
                &[],
                "pkg",
            ),
            (
                "npm exec --yes --package=@x/srv -- srv /d",
                Launcher::Runner(Runner::NpmExec),
                None,
                &["@x/srv"],
                Some("srv"),
                &["/d"],
                "srv",
            ),
            (
                "pnpm dlx @x/srv /d",
                Launcher::Runner(Runner::PnpmDlx),
                None,
                &["@x/srv"],
                None,
                &["/d"],
                "srv",
            ),
            (
                "bunx @x/srv /d",
                Launcher::Runner(Runner::Bunx),
                None,
                &["@x/srv"],
                None,
                &["/d"],
                "srv",
            ),
            (
                "yarn dlx @x/srv /d",
                Launcher::Runner(Runner::YarnDlx),
                None,
                &["@x/srv"],
                None,
                &["/d"],
                "srv",
            ),
            (
                "uvx mcp-server-git --repository /r",
                Launcher::Runner(Runner::Uvx),
                None,
                &["mcp-server-git"],
                None,
                &["--repository", "/r"],
                "mcp-server-git",
            ),
            (
                "uvx --from mcp-server-time==2025.9.25 mcp-server-time --local-timezone UTC",
                Launcher::Runner(Runner::Uvx),
                None,
                &["mcp-server-time==2025.9.25"],
                Some("mcp-server-time"),
                &["--local-timezone", "UTC"],
                "mcp-server-time",
            ),
            (
                "uv tool run --python 3.11 mcp-server-git",
                Launcher::Runner(Runner::Uvx),
                None,
                &["mcp-server-git"],
                None,
                &[],
                "mcp-server-git",
            ),
            (
                "uv --directory /w/weather run weather.py",
                Launcher::Runner(Runner::UvRun),
                Some("weather.py"),
                &[],
                None,
                &[],
                "weather",
            ),
            (
                "uv run --with mcp mcp run server.py",
                Launcher::Runner(Runner::UvRun),
                None,
                &[],
                Some("mcp"),
                &["run", "server.py"],
                "mcp",
            ),
            (
                "pipx run --spec mcp-server-fetch==1 mcp-server-fetch",
                Launcher::Runner(Runner::PipxRun),
                None,
                &["mcp-server-fetch==1"],
                Some("mcp-server-fetch"),
                &[],
                "mcp-server-fetch",
            ),
            (
                "python3 -m mcp_server_git --repository .",
                Launcher::Python,
                None,
                &[],
                None,
                &["--repository", "."],
                "mcp_server_git",
            ),
            (
                "python -u -X utf8 /opt/srv/server.py --db d.sqlite",
                Launcher::Python,
                Some("/opt/srv/server.py"),
                &[],
                None,
                &["--db", "d.sqlite"],
                "srv",
            ),
            (
                "node --env-file .env server.js /data",
                Launcher::Node,
                Some("server.js"),
                &[],
                None,
                &["/data"],
                "server",
            ),
            (
                "node --require ./hook.cjs --env-file=.env dist/index.mjs",
                Launcher::Node,
                Some("dist/index.mjs"),
                &[],
                None,
                &[],
                "index",
            ),
            (
                "deno run -A --config deno.json main.ts /d",
                Launcher::Deno,
                Some("main.ts"),
                &[],
                None,
                &["/d"],
                "main",
            ),
            (
                "bun run src/index.ts /d",
                Launcher::Bun,
                Some("src/index.ts"),
                &[],
                None,
                &["/d"],
                "index",
            ),
            (
                "sh ./start.sh /d",
                Launcher::Shell,
                Some("./start.sh"),
                &[],
                None,
                &["/d"],
                "start",
            ),
            (
                "/usr/local/bin/my-mcp --root /d",
                Launcher::Native,
                None,
                &[],
                None,
                &["--root", "/d"],
                "my-mcp",
            ),
        ];
        for (line, launcher, script, packages, command, server_args, name) in rows {
            let c = parse(line);
            assert_eq!(&c.launcher, launcher, "{line}");
            assert_eq!(c.script(), *script, "{line}: script");
            assert_eq!(c.packages, *packages, "{line}: packages");
            assert_eq!(c.package_command.as_deref(), *command, "{line}: command");
            assert_eq!(c.server_args(), *server_args, "{line}: server args");
            assert_eq!(c.default_name(), *name, "{line}: name");
        }
    }

    #[test]
    fn generic_script_names_take_their_project_directory() {
        let name = |s: &str| parse(s).default_name();
        assert_eq!(name("node /home/me/mcp-notes/dist/index.js"), "mcp-notes");
        assert_eq!(name("node /home/me/mcp-todo/dist/index.js"), "mcp-todo");
        assert_eq!(name("python3 /opt/weather/server.py"), "weather");
        assert_eq!(name("node tools.js"), "tools");
        assert_eq!(name("node index.js"), "index");
        assert_eq!(name("node ./src/index.ts"), "index");
    }

    #[test]
    fn env_files_and_launcher_files_are_not_the_script() {
        let c = parse("node --env-file .env server.js");
        assert_eq!(c.script(), Some("server.js"));
        assert_eq!(c.env_files, vec![2]);
        let c = parse("node --env-file=.env -r ./hook.cjs server.js");
        assert_eq!(c.script(), Some("server.js"));
        assert_eq!(c.env_files, vec![1]);
        assert_eq!(c.launcher_files, vec![3]);
        assert_eq!(c.runtime_arg_indexes(), vec![3, 4]);
    }

    #[test]
    fn uv_directory_and_inline_code() {
        let c = parse("uv --directory /w/weather run weather.py");
        assert_eq!(c.directory.as_deref(), Some("/w/weather"));
        let c = parse("uv run --directory /w server.py");
        assert_eq!(c.directory.as_deref(), Some("/w"));
        assert_eq!(c.script(), Some("server.py"));
        let c = parse("python3 -c print(1) /x");
        assert!(c.inline_code);
        assert_eq!(c.server_args(), ["/x"]);
        let c = parse("node -e 0");
        assert!(c.inline_code && c.script.is_none());
    }

    #[test]
    fn package_names() {
        assert_eq!(package_name("@scope/pkg@1.2.3"), "@scope/pkg");
        assert_eq!(package_name("@scope/pkg"), "@scope/pkg");
        assert_eq!(package_name("pkg@latest"), "pkg");
        assert_eq!(package_name("mcp-server-git==2026.1.1"), "mcp-server-git");
        assert_eq!(package_name("pkg[extra]>=1"), "pkg");
    }
}
