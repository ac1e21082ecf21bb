//! MCP, both ways. `server/`: oi-tui as a code-execution server for other agents (`oi-tui
//! mcp` over stdio, `--listen` over Streamable HTTP, and the open workbench with
//! `--mcp-listen`); every call goes through the engine (`Op::RunCode`), so the same policy,
//! approvals, sandbox and kernels apply as to the model's blocks. `client/`: the user's own
//! MCP servers (`[mcp_servers.NAME]`), whose tools are offered to the model beside `execute`
//! and approved like blocks. This folder speaks MCP and nothing else: what runs and who
//! approves it is the engine's business.

use clap::{Args, Subcommand};

/// `oi-tui mcp`: serve oi-tui's kernels over MCP, or (`mcp list`) show the servers oi-tui
/// uses as a client.
#[derive(Debug, Args)]
pub struct McpArgs {
    #[command(subcommand)]
    pub command: Option<McpCommand>,
    /// Serve over Streamable HTTP at this address (loopback by default: 127.0.0.1:PORT),
    /// instead of standard input and output.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// When blocks run without a question: ask (a client that supports elicitation is asked;
    /// else the block is declined), rules (blocks the [policy] allow rules cover run) or
    /// auto.
    #[arg(long, value_enum, value_name = "MODE", conflicts_with = "auto_run")]
    pub approval: Option<crate::cli::ApprovalArg>,
    /// Run blocks without asking (= --approval auto); deny rules still apply.
    #[arg(short = 'y', long = "auto-run")]
    pub auto_run: bool,
    #[command(flatten)]
    pub sandboxing: crate::cli::SandboxFlags,
}

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// The MCP servers configured in config.toml ([mcp_servers.NAME]): whether each starts,
    /// and its tools.
    List,
}

impl McpArgs {
    /// The command line's options with this command's own flags laid over them.
    pub fn options(&self, mut options: crate::cli::Options) -> crate::cli::Options {
        if self.approval.is_some() {
            options.approval = self.approval;
            options.auto_run = false;
        }
        if self.auto_run {
            options.auto_run = true;
            options.approval = None;
        }
        let (mine, theirs) = (&self.sandboxing, &mut options.sandboxing);
        theirs.on = mine.on.clone().or(theirs.on.take());
        theirs.sandbox = mine.sandbox.or(theirs.sandbox);
        theirs.network = mine.network.or(theirs.network);
        theirs.safe_mode |= mine.safe_mode;
        options
    }
}

pub mod client;
pub mod server;

/// `oi-tui mcp …`: picks what to do; returns the exit status.
pub async fn run(args: McpArgs, settings: crate::config::Settings) -> i32 {
    match (&args.command, &args.listen) {
        (Some(McpCommand::List), _) => client::list(settings).await,
        (None, Some(listen)) => server::http(settings, listen).await,
        (None, None) => server::stdio(settings).await,
    }
}
