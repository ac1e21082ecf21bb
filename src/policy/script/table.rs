//! The table of calls the script analysis knows, per language: which dotted names run
//! shell commands, delete, write, open files, use the network, change permissions, or run
//! code given at run time.

use super::Language;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Act {
    /// Runs a command: a string goes through the shell, a list is an argv.
    Shell,
    /// Runs a program with an argument list (`spawn('rm', ['-rf', 'x'])`, `system2`).
    ProgramArgs,
    /// `os.exec*` / `os.spawn*`: argv from a list or from the positional strings.
    Exec {
        skip: usize,
    },
    Delete,
    Write,
    Open,
    Network,
    Perms,
    /// Runs code given as a string (analysed when literal).
    Eval,
    /// Always opaque.
    Dynamic,
    /// Imports or looks up a name given at run time.
    DynamicName,
    /// Changes the working directory: later relative paths are judged from there.
    Chdir,
}

pub(super) fn lookup(lang: Language, name: &str, last: &str, child_process: bool) -> Option<Act> {
    use Act::*;
    let act = match lang {
        Language::Python => match name {
            "os.system"
            | "os.popen"
            | "subprocess.run"
            | "subprocess.call"
            | "subprocess.check_call"
            | "subprocess.check_output"
            | "subprocess.Popen"
            | "subprocess.getoutput"
            | "subprocess.getstatusoutput"
            | "commands.getoutput"
            | "commands.getstatusoutput"
            | "pty.spawn"
            | "asyncio.create_subprocess_shell" => Shell,
            "asyncio.create_subprocess_exec" => Exec { skip: 0 },
            "os.remove" | "os.unlink" | "os.rmdir" | "os.removedirs" | "shutil.rmtree" => Delete,
            "shutil.copy" | "shutil.copy2" | "shutil.copyfile" | "shutil.copytree"
            | "shutil.move" | "os.rename" | "os.replace" | "os.makedirs" | "os.mkdir"
            | "os.symlink" | "os.link" | "os.truncate" => Write,
            "os.chmod" | "os.chown" | "os.lchown" | "shutil.chown" => Perms,
            "open" | "io.open" | "codecs.open" => Open,
            "exec" | "eval" | "compile" | "builtins.exec" | "builtins.eval"
            | "builtins.compile" => Eval,
            "os.chdir" => Chdir,
            "__import__" | "importlib.import_module" | "getattr" | "builtins.__import__" => {
                DynamicName
            }
            n if n.starts_with("runpy.") || n.starts_with("importlib.") => Dynamic,
            "ctypes.CDLL" | "ctypes.cdll.LoadLibrary" | "marshal.loads" | "pickle.loads" => Dynamic,
            n if n.starts_with("os.exec") => Exec { skip: 0 },
            n if n.starts_with("os.spawn") || n.starts_with("os.posix_spawn") => Exec { skip: 1 },
            n if [
                "socket.",
                "requests.",
                "urllib.",
                "urllib2.",
                "urllib3.",
                "http.client",
                "httpx.",
                "aiohttp.",
                "ftplib.",
                "smtplib.",
                "paramiko.",
                "telnetlib.",
                "websocket",
                "xmlrpc.",
            ]
            .iter()
            .any(|p| n.starts_with(p)) =>
            {
                Network
            }
            // The standard `platform` module only reads facts (`platform.system()` is the
            // OS name); names are resolved through imports first, so `import os as
            // platform` still reaches `os.system` above.
            n if n.starts_with("platform.") => return None,
            _ => match last {
                "system" | "popen" | "check_output" | "check_call" | "Popen" | "getoutput" => Shell,
                "rmtree" | "unlink" | "rmdir" => Delete,
                "write_text" | "write_bytes" | "touch" | "mkdir" | "symlink_to" | "rename"
                | "replace" => Write,
                "chmod" | "lchmod" | "chown" => Perms,
                "urlopen" | "urlretrieve" | "create_connection" => Network,
                _ => return None,
            },
        },
        Language::JavaScript => match last {
            "exec" | "execSync" if child_process || name != "exec" && name.contains("child") => {
                Shell
            }
            "execSync" => Shell,
            "spawn" | "spawnSync" | "execFile" | "execFileSync" | "fork"
                if child_process || last != "spawn" =>
            {
                ProgramArgs
            }
            "rmSync" | "rmdirSync" | "unlinkSync" | "rm" | "rmdir" | "unlink"
                if name.contains("fs") || child_process =>
            {
                Delete
            }
            "rmSync" | "rmdirSync" | "unlinkSync" => Delete,
            "writeFileSync" | "writeFile" | "appendFileSync" | "appendFile" | "mkdirSync"
            | "copyFileSync" | "renameSync" | "createWriteStream" | "cpSync" | "symlinkSync" => {
                Write
            }
            "chmodSync" | "chownSync" | "chmod" | "chown" => Perms,
            "fetch" | "XMLHttpRequest" | "WebSocket" | "createConnection" | "axios" => Network,
            "get" | "request" | "post" | "connect"
                if ["http.", "https.", "net.", "axios.", "tls."]
                    .iter()
                    .any(|p| name.starts_with(p)) =>
            {
                Network
            }
            "eval" => Eval,
            "process.chdir" => Chdir,
            "Function" | "runInThisContext" | "runInNewContext" | "runInContext" | "setTimeout"
                if last != "setTimeout" =>
            {
                Dynamic
            }
            "require" | "import" => DynamicName,
            _ => return None,
        },
        Language::Ruby => match name {
            "system" | "exec" | "spawn" | "Kernel.system" | "Kernel.exec" | "Kernel.spawn"
            | "IO.popen" | "Process.spawn" | "PTY.spawn" => Shell,
            n if n.starts_with("Open3.") => Shell,
            "File.delete"
            | "File.unlink"
            | "Dir.rmdir"
            | "Dir.delete"
            | "FileUtils.rm"
            | "FileUtils.rm_r"
            | "FileUtils.rm_rf"
            | "FileUtils.rm_f"
            | "FileUtils.remove"
            | "FileUtils.remove_dir"
            | "FileUtils.remove_entry"
            | "FileUtils.rmdir"
            | "FileUtils.rmtree" => Delete,
            "File.write" | "IO.write" | "FileUtils.cp" | "FileUtils.mv" | "FileUtils.mkdir_p"
            | "FileUtils.touch" | "FileUtils.cp_r" | "Dir.mkdir" | "File.rename" => Write,
            "File.open" | "open" => Open,
            "File.chmod" | "File.chown" | "FileUtils.chmod" | "FileUtils.chown"
            | "FileUtils.chmod_R" | "FileUtils.chown_R" => Perms,
            "eval" | "instance_eval" | "class_eval" | "module_eval" => Eval,
            "Dir.chdir" | "FileUtils.cd" | "FileUtils.chdir" => Chdir,
            "send" | "public_send" | "__send__" | "const_get" | "require" | "require_relative"
            | "load" | "method" | "instance_method" | "public_method" => DynamicName,
            n if [
                "Net.",
                "URI.open",
                "TCPSocket",
                "Socket.",
                "HTTParty",
                "Faraday",
                "open-uri",
            ]
            .iter()
            .any(|p| n.starts_with(p)) =>
            {
                Network
            }
            _ => match last {
                "instance_eval" | "class_eval" | "module_eval" | "instance_exec" => Eval,
                "send" | "public_send" | "__send__" | "const_get" | "method"
                | "instance_method" | "public_method" => DynamicName,
                "rm_rf" | "rm_r" | "rmtree" => Delete,
                _ => return None,
            },
        },
        Language::Perl => match name {
            "system" | "exec" | "CORE.system" | "CORE.exec" | "readpipe" | "CORE.readpipe"
            | "open2" | "open3" | "IPC.Open2.open2" | "IPC.Open3.open3" => Shell,
            "unlink"
            | "rmdir"
            | "File.Path.rmtree"
            | "File.Path.remove_tree"
            | "rmtree"
            | "remove_tree" => Delete,
            "mkdir" | "rename" | "File.Copy.copy" | "File.Copy.move" | "copy" | "move"
            | "make_path" | "mkpath" | "symlink" => Write,
            "open" | "sysopen" => Open,
            "chmod" | "chown" => Perms,
            "eval" => Eval,
            "chdir" => Chdir,
            "require" | "do" => DynamicName,
            n if [
                "LWP",
                "HTTP.Tiny",
                "IO.Socket",
                "Net.",
                "Socket",
                "getstore",
                "get",
                "Mojo.UserAgent",
            ]
            .iter()
            .any(|p| n.starts_with(p))
                && n != "getc" =>
            {
                Network
            }
            _ => return None,
        },
        Language::R => match name {
            "system" | "shell" | "base.system" | "pipe" | "base.pipe" => Shell,
            "system2" | "processx.run" | "sys.exec_wait" => ProgramArgs,
            "file.remove" | "unlink" | "fs.file_delete" | "fs.dir_delete" => Delete,
            "writeLines" | "write.csv" | "write.table" | "saveRDS" | "save" | "file.create"
            | "dir.create" | "file.copy" | "file.rename" | "sink" | "writeBin" | "write"
            | "readr.write_csv" => Write,
            "Sys.chmod" | "Sys.setFileTime" => Perms,
            "download.file" | "url" | "curl.curl" | "httr.GET" | "httr.POST"
            | "socketConnection" | "curl.curl_download" | "RCurl.getURL" | "httr2.req_perform" => {
                Network
            }
            "eval" | "evalq" => Eval,
            "setwd" => Chdir,
            "source" | "sys.source" | "do.call" | "get" | "get0" | "match.fun" | "getFunction"
            | "library" | "require" => DynamicName,
            _ => return None,
        },
        _ => return None,
    };
    Some(act)
}
